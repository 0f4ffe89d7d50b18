"""KV residency: vLLM's ``kv_block_*`` histograms mapped, and eviction before reuse against an oracle.

The pages are rendered by ``prometheus_client`` (the library vLLM uses) from histograms declared as
vLLM declares them (names, HELP, labels and ``kv_cache_residency_buckets`` of
``vllm/v1/metrics/loggers.py``, cited in tests/fixtures/metrics/SOURCES.md). The oracle works from
the raw observations and the definition in docs/collector.md alone: bucket counts by counting, the
median by Prometheus' ``histogram_quantile`` interpolation, the share by linear interpolation.
"""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from monitor.scrape.collector import read_text
from monitor.scrape.interval import signals

#: ``kv_cache_residency_buckets`` of vLLM's PrometheusStatLogger.
BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300,
           600, 1200, 1800)  # fmt: skip
LABELS = ("model_name", "engine")


class Server:
    """The residency families of one vLLM engine, observed over time."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        Counter("vllm:request_success", "Count of successfully processed requests.",
                [*LABELS, "finished_reason"], registry=r).labels("m", "0", "stop").inc(3)  # fmt: skip
        names = ("lifetime", "idle_before_evict", "reuse_gap")
        self.hists = [
            Histogram(
                f"vllm:kv_block_{n}_seconds", "Sampled metrics.", LABELS, buckets=BUCKETS, registry=r
            ).labels("m", "0")
            for n in names
        ]

    def observe(self, lifetimes: list[float], idles: list[float], gaps: list[float]) -> str:
        for h, values in zip(self.hists, (lifetimes, idles, gaps), strict=True):
            for v in values:
                h.observe(v)
        return generate_latest(self.registry).decode()


def page(lifetimes: list[float], idles: list[float], gaps: list[float]) -> str:
    return Server().observe(lifetimes, idles, gaps)


def oracle_median(values: list[float]) -> float:
    """histogram_quantile(0.5) over BUCKETS, computed from the raw values."""
    edges = [*BUCKETS, math.inf]
    counts = [sum(1 for v in values if v <= e) for e in edges]
    rank = 0.5 * len(values)
    i = next(k for k, c in enumerate(counts) if c >= rank)
    lower, below = (0.0, 0) if i == 0 else (edges[i - 1], counts[i - 1])
    return lower + (edges[i] - lower) * (rank - below) / (counts[i] - below)


def oracle_share(idles: list[float], t: float) -> float:
    """Share of idle times <= t, linear inside the bucket that holds t."""
    edges = [*BUCKETS, math.inf]
    i = next(k for k, e in enumerate(edges) if e >= t)
    lower = 0.0 if i == 0 else edges[i - 1]
    below = sum(1 for v in idles if v <= lower)
    inside = sum(1 for v in idles if lower < v <= edges[i])
    return (below + inside * (t - lower) / (edges[i] - lower)) / len(idles)


CASES = {
    "thrash": ([30.0] * 6, [0.3, 0.4, 1.5, 3.0, 4.0, 40.0], [4.0, 6.0, 7.0, 8.0, 9.0, 15.0]),
    "roomy": ([900.0] * 4, [400.0, 500.0, 700.0, 1000.0], [0.15, 0.3, 0.4, 3.0]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_eviction_before_reuse_matches_the_oracle(case: str) -> None:
    lifetimes, idles, gaps = CASES[case]
    res = signals("ep", read_text(page(lifetimes, idles, gaps), 10.0), None).total.kv_residency
    assert res is not None
    t = oracle_median(gaps)
    assert res.reuse_gap_p50 == pytest.approx(t)
    assert res.eviction_before_reuse == pytest.approx(oracle_share(idles, t))
    assert res.evicted_blocks == len(idles) and res.reuse_gaps == len(gaps)
    assert res.lifetime_p50 == pytest.approx(oracle_median(lifetimes))


def test_thrash_and_roomy_are_told_apart() -> None:
    shares = {c: signals("ep", read_text(page(*CASES[c]), 1.0), None).total.kv_residency for c in CASES}
    thrash, roomy = shares["thrash"], shares["roomy"]
    assert thrash is not None and roomy is not None
    assert thrash.eviction_before_reuse is not None and thrash.eviction_before_reuse > 0.5
    assert roomy.eviction_before_reuse == 0.0


def test_interval_uses_only_the_new_evictions() -> None:
    server = Server()
    older = read_text(server.observe([5.0], [500.0], [1.0, 1.0]), 0.0)
    newer = read_text(server.observe([5.0, 5.0], [0.3, 0.4], [8.0, 9.0]), 60.0)
    res = signals("ep", newer, older).total.kv_residency
    assert res is not None and res.evicted_blocks == 2 and res.reuse_gaps == 2
    t = oracle_median([8.0, 9.0])
    assert res.eviction_before_reuse == pytest.approx(oracle_share([0.3, 0.4], t)) == 1.0


def test_no_reuse_gaps_gives_no_share_and_absent_families_no_residency() -> None:
    res = signals("ep", read_text(page([1.0], [0.5], []), 1.0), None).total
    assert res.kv_residency is not None and res.kv_residency.eviction_before_reuse is None
    assert res.to_dict()["kv_residency"]["evicted_blocks"] == 1
    plain = read_text('# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 1\n')
    assert signals("ep", plain, None).total.to_dict()["kv_residency"] is None
