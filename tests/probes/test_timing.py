"""Timing definitions on recorded streams with known arrival times."""

from __future__ import annotations

import pytest

from monitor.probes.stream import sse_events
from monitor.probes.timing import percentile, timings_for
from monitor.probes.transcript import Transcript
from tests.probes.sse_fixtures import DONE, chunk, usage_chunk


def run(pairs: list[tuple[float, bytes]], sent: float = 10.0, end: float | None = None):  # type: ignore[no-untyped-def]
    t = Transcript().extend(sse_events(pairs))
    return timings_for(t, sent, end if end is not None else pairs[-1][0])


def test_ttft_skips_role_chunk_and_splits_reasoning_from_answer() -> None:
    pairs = [
        (10.1, chunk({"role": "assistant", "content": ""})),
        (10.3, chunk({"reasoning": "hmm"})),
        (10.4, chunk({"reasoning": " ok"})),
        (10.6, chunk({"content": "ready"})),
        (10.7, chunk({}, "stop")),
        (10.7, usage_chunk(5, 3, reasoning=2)),
        (10.8, DONE),
    ]
    t = run(pairs)
    assert t.ttft == pytest.approx(0.3)
    assert t.first_reasoning == pytest.approx(0.3)
    assert t.ttft_answer == pytest.approx(0.6)
    assert t.e2e == pytest.approx(0.8)
    assert t.tpot == pytest.approx((0.8 - 0.3) / 2)
    assert t.itl_samples == pytest.approx((0.1, 0.2))


def test_running_usage_splits_a_gap_over_its_tokens() -> None:
    pairs = [
        (10.0, chunk({"content": "a"}, usage={"prompt_tokens": 1, "completion_tokens": 1})),
        (10.3, chunk({"content": "bcd"}, usage={"prompt_tokens": 1, "completion_tokens": 4})),
        (10.4, chunk({"content": "e"}, usage={"prompt_tokens": 1, "completion_tokens": 5})),
        (10.4, chunk({}, "stop")),
        (10.5, DONE),
    ]
    assert run(pairs, sent=9.9).itl_samples == pytest.approx((0.1, 0.1, 0.1, 0.1))


def test_without_running_usage_the_mean_chunk_size_is_used() -> None:
    pairs = [
        (10.0, chunk({"content": "ab"})),
        (10.4, chunk({"content": "cd"})),
        (10.4, chunk({}, "stop")),
        (10.4, usage_chunk(1, 4)),
        (10.5, DONE),
    ]
    assert run(pairs, sent=9.9).itl_samples == pytest.approx((0.2, 0.2))


def test_server_metrics_give_queue_prefill_decode_and_network() -> None:
    metrics = {"queue_time_ms": 50.0, "time_to_first_token_ms": 150.0, "generation_time_ms": 300.0,
               "mean_itl_ms": 30.0, "tokens_per_second": 20.0}  # fmt: skip
    pairs = [(10.25, chunk({"content": "x"})), (10.3, chunk({}, "stop")),
             (10.3, usage_chunk(1, 1, metrics=metrics)), (10.3, DONE)]  # fmt: skip
    t = run(pairs)
    assert (t.server_queue, t.server_prefill, t.server_decode) == pytest.approx((0.05, 0.15, 0.3))
    assert t.network == pytest.approx(0.25 - 0.2)
    assert t.tpot is None  # one token: no TPOT


def test_no_timing_is_negative_when_the_clocks_disagree() -> None:
    """The whole answer in one chunk, the stream's end stamped 9 ns before that chunk's arrival
    (two clocks): TPOT 0, never -8.7e-9 s as the store once held."""
    pairs = [(10.8, chunk({"content": "abcd"})), (10.8, chunk({}, "stop")), (10.8, usage_chunk(1, 4)),
             (10.8, DONE)]  # fmt: skip
    t = run(pairs, end=10.8 - 9e-9)
    assert t.tpot == 0.0 and t.e2e is not None and t.e2e >= 0 and t.ttft is not None


def test_percentile_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 99) == 99.0
