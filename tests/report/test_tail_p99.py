"""The report's P99+ band (issue 25: "which stage owns P95 and P99"), for probes and for real
traffic, in every format and in ``m3mon slo status``, against shares counted by hand from the
documented definition (docs/report.md "Where the tail goes": the requests at or above the
nearest-rank P99, 100 needed, else "not enough requests").

Class ``chat`` has 100 probes and 100 real-traffic traces of the same shape: 94 typical (queue
0.05 s, prefill 0.4 s), 4 with a 2.5 s prefill, 2 that queued 4.0 s (0.05 s network for a probe,
0.05 s tokenization for a span), so prefill leads P95+ and the queue owns P99+. Class ``few`` has
20 probes: enough for P95+, not for P99+.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.probes.result import ProbeResult, Timings
from monitor.store.ops import probe_op, spans_op
from monitor.traces.span import ServerSpan
from tests.report.stores import rendered, stored

REPO = Path(__file__).resolve().parents[2]
T = datetime(2026, 11, 23, 1, tzinfo=UTC).timestamp()  # in 2026-W48


def _config(folder: Path) -> str:
    return f"""\
version: m3mon/v1
endpoints:
  - {{name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}}
  - {{name: ep2, base_url: "http://127.0.0.1:10", backend: vllm, model: m, classes: [few]}}
request_classes:
  - {{name: chat, max_context_tokens: 32768, probes: [chat], slos: [{{name: a, sli: availability, objective: 99}}]}}
  - {{name: few, max_context_tokens: 32768, probes: [chat], slos: [{{name: a, sli: availability, objective: 99}}]}}
storage: {{url: "sqlite:///{folder / "report.db"}"}}
report: {{timezone: UTC}}
"""


def _shape(k: int) -> tuple[float, float]:
    """(queue, prefill) of request ``k`` of 100."""
    return (4.0, 0.4) if k >= 98 else (0.05, 2.5) if k >= 94 else (0.05, 0.4)


def _probe(cls: str, k: int) -> ProbeResult:
    queue, prefill = _shape(k)
    ttft = 0.05 + queue + prefill
    t = Timings(ttft=ttft, e2e=ttft + 1.0, server_queue=queue, server_prefill=prefill, server_decode=1.0,
                network=0.05)  # fmt: skip
    at = T + 60 * k
    return ProbeResult(
        "ep" if cls == "chat" else "ep2", cls, "chat", at, None, t, finished_at=at + ttft + 1.0
    )


def _span(k: int) -> ServerSpan:
    """vLLM's llm_request span: tokenization 0.05 s, queue, prefill, decode 1.0 s, nothing after."""
    queue, prefill = _shape(k)
    ttft, start = 0.05 + queue + prefill, T + 60 * k + 30
    return ServerSpan(f"{k + 1:032x}", f"{k + 1:016x}", "llm_request", start, start + ttft + 1.0, queue=queue,
                      ttft=ttft, prefill=prefill, decode=1.0, e2e=ttft + 1.0, prompt_tokens=100,
                      completion_tokens=50, service_name="ep")  # fmt: skip


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("p99")
    probes = [_probe("chat", k) for k in range(100)] + [_probe("few", k) for k in range(20)]
    stored(
        tmp,
        _config(tmp),
        lambda m: [*(probe_op(m, p) for p in probes), spans_op([_span(k) for k in range(100)])],
    )
    return tmp


@pytest.fixture(scope="module")
def report(folder: Path) -> tuple[dict[str, list[dict[str, object]]], str, str]:
    from monitor.model import load_model

    r = rendered(load_model(folder / "monitor.yaml"), f"sqlite:///{folder / 'report.db'}")
    return json.loads(r.json), r.markdown.replace("\\", ""), html.unescape(r.html)


def _entry(entries: list[dict[str, object]], cls: str, latency: str, band: str) -> dict[str, object]:
    (e,) = [e for e in entries if (e["class"], e["latency"], e["band"]) == (cls, latency, band)]
    return e


def test_p99_in_every_format(report: tuple[dict[str, list[dict[str, object]]], str, str]) -> None:
    doc, md, page = report
    # probes: P99 (rank 99) = 4.45 s, the 2 queued requests: queue 8.0 of 8.9 s
    lines = [
        "P95+ TTFT of chat (6 requests from 2.60 s): 56% prefill; at P50 and below: 80% prefill",
        "P99+ TTFT of chat (2 requests from 4.45 s): 90% queue",
        "P99+ e2e of chat (2 requests from 5.45 s): 73% queue",
        "Real traffic: P99+ TTFT of chat (2 requests from 4.45 s): 90% queue",
        "P99+ TTFT of few: not enough requests (20 probe request(s) with a server view "
        "(per-request metrics or spans); 100 needed)",
    ]
    for line in lines:
        assert line in md and line in page, line
    assert "| chat | TTFT | P99+ | 2 |" in md
    e = _entry(doc["tail"], "chat", "ttft", "p99")
    assert (e["requests"], e["dominant"], e["why_none"], e["min_requests"]) == (2, "queue", None, 100)
    assert e["bound_seconds"] == pytest.approx(4.45)
    assert e["shares"] == pytest.approx({"retry": 0.0, "network": 0.1 / 8.9, "tokenization": 0.0,
                                         "queue": 8.0 / 8.9, "prefill": 0.8 / 8.9, "other": 0.0},
                                        abs=1e-9)  # fmt: skip
    # real traffic: tokenization instead of network, server-side TTFT 4.45 s
    e = _entry(doc["traffic_tail"], "chat", "ttft", "p99")
    assert (e["requests"], e["dominant"]) == (2, "queue")
    assert e["shares"]["queue"] == pytest.approx(8.0 / 8.9)  # type: ignore[index]
    assert e["shares"]["tokenization"] == pytest.approx(0.1 / 8.9)  # type: ignore[index]
    few = _entry(doc["tail"], "few", "ttft", "p99")
    assert (few["shares"], few["dominant"], few["bound_seconds"], few["requests"]) == ({}, None, None, 20)
    assert _entry(doc["tail"], "few", "ttft", "p95")["why_none"] is None


def test_slo_status_prints_both_bands(folder: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "monitor",
        "slo",
        "status",
        "-c",
        str(folder / "monitor.yaml"),
        "--week",
        "2026-W48",
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    assert (
        "  chat: no bottleneck: probes P95+ TTFT 56% prefill, e2e 43% prefill; P99+ TTFT 90% queue, e2e 73% queue"
        in out
    )
    assert (
        "  few: no bottleneck: probes P95+ TTFT 80% prefill, e2e 67% decode; P99+: not enough requests (20 of 100)"
        in out
    )
