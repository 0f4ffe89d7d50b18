"""Properties of the threshold choice: whatever edges a server serves (custom buckets included),
the written threshold reads back as exactly a served edge, the smallest at or above the start
value when there is one, and never below the start unless every edge is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from monitor.durations import parse_latency
from monitor.scrape.fingerprint import Fingerprint
from monitor.starter.detect import Detected
from monitor.starter.plan import plan, seconds

EDGE = st.floats(min_value=1e-4, max_value=1e4, allow_nan=False, allow_infinity=False)


def _detected(ttft: list[float], itl: list[float], ceiling: int) -> Detected:
    fp = Fingerprint(backend="vllm", generation="vllm-v1-engine", model="m", max_model_len=ceiling)
    edges = {"ttft": tuple(sorted(set(ttft))), "itl": tuple(sorted(set(itl)))}
    return Detected("http://x:1", fp, "m", True, True, False, (), False, edges,
                    {"ttft": "vllm:time_to_first_token_seconds", "itl": "vllm:inter_token_latency_seconds"})  # fmt: skip


@given(EDGE)
def test_a_written_latency_reads_back_exactly(value: float) -> None:
    assert parse_latency(seconds(value)) == value


@given(st.lists(EDGE, min_size=1, max_size=30), st.lists(EDGE, min_size=1, max_size=30),
       st.sampled_from([2048, 8192, 32768, 131072, 524288]))  # fmt: skip
def test_thresholds_are_served_edges_at_or_above_the_start(
    ttft: list[float], itl: list[float], ceiling: int
) -> None:
    (pool,) = plan([_detected(ttft, itl, ceiling)])
    starts = {"ttft": {2048: 1.0, 8192: 1.0, 32768: 2.5, 131072: 5.0}.get(ceiling, 20.0), "itl": 0.1}
    for slo in pool.slos:
        if slo.threshold is None:
            continue
        served = ttft if slo.sli == "ttft" else itl
        written = parse_latency(seconds(slo.threshold))
        assert slo.source == "server" and written in served
        above = [e for e in served if e >= starts[slo.sli]]
        assert written == (min(above) if above else max(served))
