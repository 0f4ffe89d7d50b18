"""Strict validation of a page, and the fast parser agreeing with prometheus_client's."""

from __future__ import annotations

import pytest

from monitor.errors import ScrapeError
from monitor.scrape.collector import read_text
from monitor.scrape.page import parse, parse_fast, parse_reference
from tests.scrape.conftest import page_text

H = "# TYPE vllm:e2e_request_latency_seconds histogram\n"
S = "vllm:e2e_request_latency_seconds"
LBL = 'engine="0",model_name="m"'


def hist(buckets: list[tuple[str, float]], count: float | None, total: float = 1.0) -> str:
    lines = [H] + [f'{S}_bucket{{{LBL},le="{le}"}} {v}\n' for le, v in buckets]
    if count is not None:
        lines.append(f"{S}_count{{{LBL}}} {count}\n")
    lines.append(f"{S}_sum{{{LBL}}} {total}\n")
    return "".join(lines)


def reason(text: str) -> str:
    with pytest.raises(ScrapeError) as err:
        read_text(text, 1.0)
    return err.value.reason


def test_a_valid_histogram_reads() -> None:
    r = read_text(hist([("1.0", 1), ("+Inf", 2)], 2), 1.0)
    assert r.models["m"]["0"].histograms


@pytest.mark.parametrize(
    "text",
    [
        hist([("1.0", 1), ("1.0", 2), ("+Inf", 2)], 2),  # duplicated bucket
        hist([("1.0", 3), ("2.0", 2), ("+Inf", 3)], 3),  # decreasing counts
        hist([("1.0", 1), ("2.0", 2)], 2),  # no +Inf
        hist([("1.0", 1), ("+Inf", 2)], 3),  # _count != +Inf
        hist([("1.0", 1), ("+Inf", 2)], None),  # no _count
        hist([("1.0", 1), ("+Inf", "NaN")], "NaN"),  # type: ignore[list-item,arg-type]
        hist([("x", 1), ("+Inf", 2)], 2),  # le not a number
        '# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name="m"} NaN\n',
        '# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name="m"} -3\n',
        'vllm:num_requests_running{model_name="m"} 1\nvllm:num_requests_running{model_name="m"} 2\n',
        'vllm:num_requests_running{model_name="m" 1\n',
        "# TYPE x counter\n# TYPE x gauge\nvllm:num_requests_running 1\n",
        "<html><body>502 Bad Gateway</body></html>\n",
        "# TYPE process_open_fds gauge\nprocess_open_fds 4\n",  # no recognised family
    ],
)
def test_garbled_pages_are_rejected(text: str) -> None:
    assert reason(text) == "garbled"


def test_empty_and_truncated() -> None:
    assert reason("") == "empty"
    assert reason("  \n\n") == "empty"
    assert reason('vllm:num_requests_running{model_name="m"} 1\nvllm:num_requests_wai') == "truncated"
    assert reason('vllm:num_requests_running{model_name="m"} 1') == "truncated"


def test_multiprocess_order_sum_before_buckets() -> None:
    text = (
        H
        + f"{S}_sum{{{LBL}}} 3.0\n"
        + f'{S}_bucket{{{LBL},le="1.0"}} 1\n{S}_bucket{{{LBL},le="+Inf"}} 2\n'
        + f"{S}_count{{{LBL}}} 2\n"
    )
    h = read_text(text, 1.0).models["m"]["0"].histograms[("e2e", "")]
    assert (h.edges[-1], h.count, h.sum) == (float("inf"), 2, 3.0)


def test_custom_buckets_are_read_from_the_page() -> None:
    h = read_text(hist([("0.01", 1), ("0.7", 3), ("+Inf", 4)], 4), 1.0).models["m"]["0"].histograms
    assert h[("e2e", "")].edges == (0.01, 0.7, float("inf"))


def test_label_escapes() -> None:
    text = 'vllm:num_requests_running{model_name="a\\"b\\\\c\\nd",engine="0"} 3\n'
    page = parse_fast(text)
    assert page.samples[0].labels["model_name"] == 'a"b\\c\nd'
    assert parse_reference(text).samples[0].labels == page.samples[0].labels


@pytest.mark.parametrize(
    "name",
    [
        "vllm-0.13.0.metrics.txt",
        "vllm-0.8.5.metrics.txt",
        "sglang-0.5.23.metrics.txt",
        "sglang-0.5.23.multiprocess.metrics.txt",
        "sglang-docs-2024-llama3.1-8b-metrics.txt",
        "vllm-0.33-3models-2engines.metrics.txt",
        "vllm-0.10.0-v1-glm-4.5-partial.txt",
        "vllm-0.8.x-v1-qwen2.5-coder-32b-partial.txt",
    ],
)
def test_fast_parser_matches_prometheus_client(name: str) -> None:
    text = page_text(name)
    fast, ref = parse(text, parser="fast"), parse(text, parser="reference")

    def key(p: object) -> list[tuple[str, tuple[tuple[str, str], ...], str]]:
        return sorted((s.name, tuple(sorted(s.labels.items())), repr(s.value)) for s in p.samples)  # type: ignore[attr-defined]

    assert key(fast) == key(ref)
    assert {k: v for k, v in fast.types.items()} == ref.types
