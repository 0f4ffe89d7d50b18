"""Intervals between two readings: deltas, rates, counter resets, the e2e breakdown."""

from __future__ import annotations

import pytest

from monitor.scrape.collector import read_text
from monitor.scrape.interval import signals
from monitor.scrape.reading import Reading
from tests.scrape.conftest import reading_of

L = 'engine="0",model_name="m"'


def page(stop: float, tokens: float, buckets: tuple[float, float, float], *, created: float = 100.0,
         start: float = 50.0, running: float = 1.0) -> str:  # fmt: skip
    b1, b2, inf = buckets
    return (
        f"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {start}\n"
        "# TYPE vllm:num_requests_running gauge\n"
        f"vllm:num_requests_running{{{L}}} {running}\n"
        "# TYPE vllm:request_success_total counter\n"
        f'vllm:request_success_total{{{L},finished_reason="stop"}} {stop}\n'
        "# TYPE vllm:request_success_created gauge\n"
        f'vllm:request_success_created{{{L},finished_reason="stop"}} {created}\n'
        "# TYPE vllm:generation_tokens_total counter\n"
        f"vllm:generation_tokens_total{{{L}}} {tokens}\n"
        "# TYPE vllm:e2e_request_latency_seconds histogram\n"
        f'vllm:e2e_request_latency_seconds_bucket{{{L},le="1.0"}} {b1}\n'
        f'vllm:e2e_request_latency_seconds_bucket{{{L},le="2.0"}} {b2}\n'
        f'vllm:e2e_request_latency_seconds_bucket{{{L},le="+Inf"}} {inf}\n'
        f"vllm:e2e_request_latency_seconds_count{{{L}}} {inf}\n"
        f"vllm:e2e_request_latency_seconds_sum{{{L}}} {inf * 1.5}\n"
    )


def rd(text: str, at: float) -> Reading:
    return read_text(text, at)


def test_plain_interval() -> None:
    old = rd(page(10, 1000, (2, 8, 10)), 100.0)
    new = rd(page(30, 3000, (5, 20, 30), running=4), 110.0)
    s = signals("e", new, old)
    assert (s.start, s.end, s.duration, s.reset) == (100.0, 110.0, 10.0, False)
    assert s.total.finished == {"stop": 20}
    assert s.request_rate == 2.0 and s.generation_tokens_per_second == 200.0
    assert s.total.running == 4  # gauge: value at the end
    h = s.total.histograms["e2e"]
    assert (h.counts, h.count, h.sum) == ((3, 12, 20), 20, 30.0)


def test_counter_drop_is_a_reset_never_negative() -> None:
    old = rd(page(50, 5000, (10, 40, 50)), 100.0)
    new = rd(page(7, 700, (1, 5, 7)), 115.0)
    s = signals("e", new, old)
    assert s.reset is True
    assert s.total.finished == {"stop": 7}  # the new value is the increase
    assert s.total.generation_tokens == 700
    assert s.total.histograms["e2e"].counts == (1, 5, 7)


def test_changed_created_is_a_reset_even_when_values_grew() -> None:
    old = rd(page(5, 100, (1, 2, 3), created=100.0), 100.0)
    new = rd(page(9, 150, (1, 2, 3), created=105.0), 110.0)
    s = signals("e", new, old)
    assert s.reset is True and s.total.finished == {"stop": 9}
    assert s.total.generation_tokens == 50  # that series' _created did not change


def test_changed_process_start_resets_everything() -> None:
    old = rd(page(5, 100, (1, 2, 3), start=50.0), 100.0)
    new = rd(page(9, 150, (2, 3, 4), start=60.0), 110.0)
    s = signals("e", new, old)
    assert s.reset is True
    assert (s.total.finished["stop"], s.total.generation_tokens, s.total.histograms["e2e"].count) == (
        9,
        150,
        4,
    )


def test_cumulative_has_no_rates() -> None:
    s = signals("e", rd(page(5, 100, (1, 2, 3)), 100.0))
    assert s.start is None and s.duration is None and s.request_rate is None and not s.reset


def test_same_page_twice_is_an_empty_interval() -> None:
    r = reading_of("vllm-0.13.0.metrics.txt", 10.0)
    r2 = reading_of("vllm-0.13.0.metrics.txt", 25.0)
    s = signals("e", r2, r)
    assert s.total.requests == 0 and s.reset is False and s.request_rate == 0
    assert s.total.histograms["ttft"].quantile(0.5) is None
    assert s.breakdown() is None


def test_breakdown_of_a_fixture() -> None:
    s = signals("e", reading_of("vllm-0.13.0.metrics.txt"))
    b = s.breakdown()
    assert b is not None
    e2e = 1064.3651905059814
    assert b["queue"] == pytest.approx(70.46677512962515 / e2e)
    assert b["prefill"] == pytest.approx(40.60357655025791 / e2e)
    assert b["decode"] == pytest.approx(952.9748339548382 / e2e)
    assert b["other"] >= 0 and sum(b.values()) == pytest.approx(1.0, abs=1e-3)


def _rejections(capacity: float, tokens: float) -> str:
    """vLLM 0.33's frontend queue limits: a counter with ``model_name`` and ``reason``, no engine."""
    return page(10, 1000, (2, 8, 10)) + (
        "# TYPE vllm:admission_rejections_total counter\n"
        f'vllm:admission_rejections_total{{model_name="m",reason="max_num_queued_reqs"}} {capacity}\n'
        f'vllm:admission_rejections_total{{model_name="m",reason="max_num_queued_tokens"}} {tokens}\n'
    )


def test_admission_rejections_are_read_summed_over_reasons() -> None:
    """The load-shedding evidence (docs/bottleneck.md): 3 + 1 refused at the first scrape, 10 + 4 at
    the second: 10 more over the interval, whatever the reason; absent on a page without them."""
    s = signals("e", rd(_rejections(10, 4), 110.0), rd(_rejections(3, 1), 100.0))
    assert s.total.admission_rejections == 10
    assert (
        signals(
            "e", rd(page(30, 3000, (5, 20, 30)), 110.0), rd(page(10, 1000, (2, 8, 10)), 100.0)
        ).total.admission_rejections
        is None
    )
