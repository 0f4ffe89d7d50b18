"""``m3mon check-config FILE --metrics SOURCE``: server latency thresholds against served bucket edges.

The pages are real: tests/fixtures/metrics/ holds pages produced by vLLM's and SGLang's own metrics
code (see its README), and tests/config/pages/ one page hand-edited from the vLLM 0.13.0 capture
to custom TTFT buckets (0.1 0.25 0.5 1 2 3 5 10 30 60). The expected edges below were read off the
pages by eye (``grep time_to_first_token_seconds_bucket``), not computed by the code under test.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.generate.promql import VLLM_LATENCY
from monitor.slo.edges import families
from monitor.slo.slices import SERVER_HISTOGRAMS
from tests.config.test_check_volume import EXAMPLE, EXAMPLE_WARNINGS, findings_of
from tests.support.http import serving

FIXTURES = Path(__file__).parents[1] / "fixtures" / "metrics"
CUSTOM = Path(__file__).parent / "pages" / "vllm-0.13.0-custom-ttft-buckets.metrics.txt"
V013 = FIXTURES / "vllm-0.13.0.metrics.txt"
V085 = FIXTURES / "vllm-0.8.5.metrics.txt"
SGLANG = FIXTURES / "sglang-0.5.23.metrics.txt"

NO_EVENTS = "this pool gives the SLO no events"
# examples/monitor.yaml: m3-interactive serves interactive-32k (server ttft 2.5s, itl 0.1s);
# m3-repo serves repo-analysis-128k (server ttft 20s, e2e 120s, queue_time 5s); m3-extended none.
REPO_UNCHECKED = (
    "note: m3-repo: not checked (no --metrics m3-repo=URL_OR_FILE); it serves 3 server-sourced latency SLOs"
)
INTERACTIVE_UNCHECKED = (
    "note: m3-interactive: not checked (no --metrics m3-interactive=URL_OR_FILE); "
    "it serves 2 server-sourced latency SLOs"
)


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    """Exit status, the lines after the summary and the probe-volume warnings, and stderr."""
    code = main(["check-config", *args])
    out = capsys.readouterr()
    lines = findings_of(out.out)
    # the drift guard's lines (": drift: ") have their own tests (tests/scrape/test_drift_check.py)
    kept = [line for line in lines if not line.startswith("warning:") and " drift: " not in line]
    return code, kept, out.err


def one_endpoint(tmp_path: Path, backend: str, slos: str) -> Path:
    path = tmp_path / "pool.yaml"
    path.write_text(
        "version: m3mon/v1\nendpoints:\n"
        f"  - {{name: pool, base_url: 'http://127.0.0.1:8000', backend: {backend}, "
        "model: MiniMaxAI/MiniMax-M3, classes: [chat]}\n"
        "request_classes:\n  - name: chat\n    max_context_tokens: 32768\n    probes: [chat]\n"
        f"    slos:\n{slos}"
    )
    return path


def test_default_buckets_of_real_vllm_pages_pass(capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM 0.13.0 TTFT edges include 2.5, ITL edges 0.1; vLLM 0.8.5 TTFT has 20, e2e 120, queue 5.
    code, lines, err = check(
        capsys, str(EXAMPLE), "--metrics", f"m3-interactive={V013}", "--metrics", f"m3-repo={V085}"
    )
    assert (code, err) == (0, "")
    assert lines == [
        "ok: m3-interactive: interactive-32k/ttft-p95: threshold 2.5s is a bucket edge of vllm:time_to_first_token_seconds",
        "ok: m3-interactive: interactive-32k/itl-p95: threshold 0.1s is a bucket edge of vllm:inter_token_latency_seconds",
        "ok: m3-repo: repo-analysis-128k/ttft-p95: threshold 20s is a bucket edge of vllm:time_to_first_token_seconds",
        "ok: m3-repo: repo-analysis-128k/e2e-p95: threshold 120s is a bucket edge of vllm:e2e_request_latency_seconds",
        "ok: m3-repo: repo-analysis-128k/queue-p95: threshold 5s is a bucket edge of vllm:request_queue_time_seconds",
    ]


def test_custom_buckets_without_the_threshold_fail(capsys: pytest.CaptureFixture[str]) -> None:
    # The hand-edited page's TTFT edges are 0.1 0.25 0.5 1 2 3 5 10 30 60: 2.5 lies between 2 and 3.
    code, lines, _ = check(capsys, str(EXAMPLE), "--metrics", f"m3-interactive={CUSTOM}")
    assert code == 1
    assert lines == [
        "error: m3-interactive: interactive-32k/ttft-p95: threshold 2.5s is not a bucket edge of "
        f"vllm:time_to_first_token_seconds (nearest edges: 2s below, 3s above); {NO_EVENTS}",
        "ok: m3-interactive: interactive-32k/itl-p95: threshold 0.1s is a bucket edge of vllm:inter_token_latency_seconds",
        REPO_UNCHECKED,
    ]


def test_findings_come_after_the_summary_and_the_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(EXAMPLE), "--metrics", f"m3-interactive={CUSTOM}"]) == 1
    found = findings_of(capsys.readouterr().out)
    assert found[:3] == EXAMPLE_WARNINGS
    assert found[3].startswith("error: m3-interactive: interactive-32k/ttft-p95:")


def test_without_metrics_nothing_about_edges_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = check(capsys, str(EXAMPLE))
    assert (code, lines) == (0, [])


def test_real_sglang_page_has_other_default_edges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # SGLang 0.5.23's TTFT edges: ... 1 2 4 6 ...; e2e: ... 1200 1800 2400 +Inf; queue: ... 4 5 10 ...;
    # request TPOT: ... 0.04 0.06 ...; ITL: ... 0.08 0.1 0.2 ...
    path = one_endpoint(
        tmp_path,
        "sglang",
        "      - {name: ttft, sli: ttft, threshold: 2.5s, objective: 95, source: server}\n"
        "      - {name: itl, sli: itl, threshold: 100ms, objective: 95, source: server}\n"
        "      - {name: tpot, sli: tpot, threshold: 50ms, objective: 95, source: server}\n"
        "      - {name: e2e, sli: e2e, threshold: 3000s, objective: 95, source: server}\n"
        "      - {name: queue, sli: queue_time, threshold: 5s, objective: 95, source: server}\n",
    )
    code, lines, _ = check(capsys, str(path), "--metrics", str(SGLANG))
    assert code == 1
    assert lines == [
        "error: pool: chat/ttft: threshold 2.5s is not a bucket edge of sglang:time_to_first_token_seconds "
        f"(nearest edges: 2s below, 4s above); {NO_EVENTS}",
        "ok: pool: chat/itl: threshold 0.1s is a bucket edge of sglang:inter_token_latency_seconds",
        "error: pool: chat/tpot: threshold 0.05s is not a bucket edge of "
        f"sglang:request_time_per_output_token_seconds (nearest edges: 0.04s below, 0.06s above); {NO_EVENTS}",
        "error: pool: chat/e2e: threshold 3000s is not a bucket edge of sglang:e2e_request_latency_seconds "
        f"(nearest edges: 2400s below, only +Inf above); {NO_EVENTS}",
        "ok: pool: chat/queue: threshold 5s is a bucket edge of sglang:queue_time_seconds",
    ]


def test_older_vllm_generations_are_read_and_missing_histograms_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM 0.8.5 has ITL only as vllm:time_per_output_token_seconds (the older name) and no
    # per-request TPOT histogram (vllm:request_time_per_output_token_seconds is 0.11+).
    path = one_endpoint(
        tmp_path,
        "vllm",
        "      - {name: itl, sli: itl, threshold: 100ms, objective: 95, source: server}\n"
        "      - {name: tpot, sli: tpot, threshold: 50ms, objective: 95, source: server}\n",
    )
    code, lines, _ = check(capsys, str(path), "--metrics", f"pool={V085}")
    assert code == 1
    assert lines == [
        "ok: pool: chat/itl: threshold 0.1s is a bucket edge of vllm:time_per_output_token_seconds",
        "error: pool: chat/tpot: the page has no tpot histogram (looked for "
        f"vllm:request_time_per_output_token_seconds); {NO_EVENTS}",
    ]


def test_threshold_below_every_edge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM's smallest TTFT edge is 0.001 s.
    path = one_endpoint(
        tmp_path, "vllm", "      - {name: ttft, sli: ttft, threshold: 0.5ms, objective: 95, source: server}\n"
    )
    code, lines, _ = check(capsys, str(path), "--metrics", str(V013))
    assert (code, lines) == (
        1,
        [
            "error: pool: chat/ttft: threshold 0.0005s is not a bucket edge of vllm:time_to_first_token_seconds "
            f"(nearest edges: no edge below, 0.001s above); {NO_EVENTS}"
        ],
    )


def test_multi_model_page_checks_the_configured_model_or_says_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = FIXTURES / "vllm-0.33-3models-2engines.metrics.txt"
    slo = "      - {name: ttft, sli: ttft, threshold: 2.5s, objective: 95, source: server}\n"
    path = one_endpoint(tmp_path, "vllm", slo)
    ok = "ok: pool: chat/ttft: threshold 2.5s is a bucket edge of vllm:time_to_first_token_seconds"
    assert check(capsys, str(path), "--metrics", str(page))[:2] == (0, [ok])
    path.write_text(path.read_text().replace("model: MiniMaxAI/MiniMax-M3", "model: org/absent"))
    code, lines, _ = check(capsys, str(path), "--metrics", str(page))
    assert (code, lines) == (
        0,
        [
            "note: pool: model 'org/absent' is not on the page; checked every model: "
            "MiniMaxAI/MiniMax-M3, org/model-b, org/model-c",
            ok,
        ],
    )


def test_an_endpoint_without_server_latency_slos_is_said_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = check(capsys, str(EXAMPLE), "--metrics", f"m3-extended={V013}")
    assert (code, lines) == (
        0,
        [
            "note: m3-extended: serves no server-sourced latency SLO; nothing to check on its page",
            INTERACTIVE_UNCHECKED,
            REPO_UNCHECKED,
        ],
    )


def test_garbled_and_unreadable_pages_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The V0 IBM excerpt is cut inside a histogram: no +Inf bucket, so the collector rejects it.
    excerpt = FIXTURES / "vllm-0.4.x-v0-ibm-fork-bloom-560m-partial.txt"
    absent = tmp_path / "absent.txt"
    code, lines, _ = check(
        capsys, str(EXAMPLE), "--metrics", f"m3-interactive={excerpt}", "--metrics", f"m3-repo={absent}"
    )
    assert code == 1
    assert lines == [
        f"error: m3-interactive: cannot check {excerpt}: garbled: histogram vllm:time_to_first_token_seconds"
        "{'model_name': 'bigscience/bloom-560m'}: no +Inf bucket",
        f"error: m3-repo: cannot check {absent}: connect_error: cannot read {absent}: No such file or directory",
    ]


def test_a_page_cut_off_mid_line_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.txt"
    cut.write_text(V013.read_text()[:5000])
    code, lines, _ = check(capsys, str(EXAMPLE), "--metrics", f"m3-interactive={cut}")
    assert code == 1
    assert len(lines) == 2 and lines[1] == REPO_UNCHECKED
    assert lines[0].startswith(f"error: m3-interactive: cannot check {cut}: truncated: page ends mid-line:")


# --- URLs: a real local HTTP server, always stopped -----------------------------------------------


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path != "/metrics":
            self.send_error(404)
            return
        body = CUSTOM.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    with serving(_Pages) as url:
        yield url


def test_url_is_fetched_like_the_collector_does(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = check(
        capsys, str(EXAMPLE), "--metrics", f"m3-interactive={server}/metrics", "--timeout", "5"
    )
    assert code == 1
    assert lines[0] == (
        "error: m3-interactive: interactive-32k/ttft-p95: threshold 2.5s is not a bucket edge of "
        f"vllm:time_to_first_token_seconds (nearest edges: 2s below, 3s above); {NO_EVENTS}"
    )


def test_url_errors(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = check(
        capsys, str(EXAMPLE), "--metrics", f"m3-interactive={server}/nope", "--timeout", "5"
    )
    assert code == 1
    assert (
        lines[0]
        == f"error: m3-interactive: cannot check {server}/nope: http_status: GET {server}/nope -> HTTP 404"
    )


def test_unanswered_url_times_out_within_the_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    # A socket that accepts connections (the kernel does) but never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/metrics"
        code, lines, _ = check(capsys, str(EXAMPLE), "--metrics", f"m3-interactive={url}", "--timeout", "0.3")
    assert code == 1
    assert (
        lines[0]
        == f"error: m3-interactive: cannot check {url}: timeout: GET {url}: no complete answer within 0.3s"
    )


# --- arguments ------------------------------------------------------------------------------------


def test_single_endpoint_config_takes_a_bare_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = one_endpoint(
        tmp_path, "vllm", "      - {name: ttft, sli: ttft, threshold: 2.5s, objective: 95, source: server}\n"
    )
    code, lines, _ = check(capsys, str(path), "--metrics", str(CUSTOM))
    assert code == 1 and lines[0].startswith("error: pool: chat/ttft: threshold 2.5s is not a bucket edge")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [str(V013)],
            f"--metrics {str(V013)!r}: say which endpoint serves it, as ENDPOINT=URL_OR_FILE; "
            "endpoints: m3-interactive, m3-repo, m3-extended",
        ),
        (
            [f"m3-nope={V013}"],
            f"--metrics 'm3-nope={V013}': unknown endpoint 'm3-nope'; endpoints: m3-interactive, m3-repo, m3-extended",
        ),
        (["m3-repo="], "--metrics 'm3-repo=': no URL or file after '='"),
        ([f"m3-repo={V013}", f"m3-repo={V085}"], "--metrics: endpoint m3-repo is given twice"),
    ],
)
def test_bad_metrics_arguments_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(EXAMPLE)]
    for a in args:
        argv += ["--metrics", a]
    code, lines, err = check(capsys, *argv)
    assert (code, lines, err) == (2, [], f"m3mon check-config: {message}\n")


def test_bad_configuration_still_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: m3mon/v0\n")
    code, _, err = check(capsys, str(bad), "--metrics", f"x={V013}")
    assert code == 2 and err.startswith("m3mon: configuration error\n")


def test_the_histogram_table_agrees_with_the_rule_generator() -> None:
    # The newest vLLM family the collector reads for each SLI is the one the generated rules query.
    for sli, (metric, _) in VLLM_LATENCY.items():
        assert families(SERVER_HISTOGRAMS[sli], "vllm")[0] == metric
