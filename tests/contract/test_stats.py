"""The noise tests and the ceiling advice against hand-computed expectations."""

from __future__ import annotations

import math

import pytest

from monitor.contract.build import Capacity, capacity_of
from monitor.contract.ceiling import from_requests
from monitor.contract.stats import exceedance_test, two_proportions
from monitor.store.replays import StoredRun


def _fisher(total: int, drawn: int, marked: int, seen: int) -> float:
    """Two-sided Fisher exact p-value, from the textbook: the hypergeometric probability of every
    outcome no more likely than the one seen."""
    pmf = {c: math.comb(marked, c) * math.comb(total - marked, drawn - c) / math.comb(total, drawn)
           for c in range(max(0, drawn - total + marked), min(marked, drawn) + 1)}  # fmt: skip
    return sum(p for p in pmf.values() if p <= pmf[seen] * (1 + 1e-9))


def test_the_exceedance_test_is_fishers_test_on_the_values_above_the_pooled_percentile() -> None:
    before = [0.100 + 0.001 * i for i in range(100)]  # 0.100 .. 0.199
    shifted = [v + 0.05 for v in before]
    diff = exceedance_test(before, shifted, 50.0)
    # nearest rank: P50 is the 50th value (0.149); the shift is 0.05 exactly
    assert diff.before == pytest.approx(0.149) and diff.delta == pytest.approx(0.05)
    # pooled: 0.100..0.149 (before), 0.150..0.199 twice, 0.200..0.249 (after); its P50 is the 100th
    # value, 0.174; 100 values lie above it, 75 of them after's
    pooled = sorted(before + shifted)
    above = [v for v in pooled if v > pooled[99]]
    seen = sum(1 for v in shifted if v > pooled[99])
    assert pooled[99] == pytest.approx(0.174) and len(above) == 100 and seen == 75
    assert diff.beyond_noise is (_fisher(200, 100, len(above), seen) <= 0.05) is True
    assert diff.low is not None and diff.high is not None and diff.low <= 0.05 <= diff.high and diff.low > 0
    same = exceedance_test(before, list(reversed(before)), 99.0)
    assert same.delta == 0 and same.beyond_noise is None  # 2 values above the pooled P99: no verdict
    same = exceedance_test(before, list(reversed(before)), 50.0)
    assert same.beyond_noise is False and _fisher(200, 100, 100, 50) == pytest.approx(1.0)
    assert exceedance_test([1.0], [2.0], 50.0).beyond_noise is None  # no outcome could be beyond noise


def test_the_interval_is_the_test_inverted() -> None:
    # before 1..10, after 11..20: every after value above every before value
    before, after = [float(i) for i in range(1, 11)], [float(i) for i in range(11, 21)]
    d = exceedance_test(before, after, 50.0)
    assert d.beyond_noise is True and _fisher(20, 10, 10, 10) == pytest.approx(2 / math.comb(20, 10))
    # the interval's ends are shifts at which after - d is just still within noise
    assert d.low is not None and d.high is not None and 0 < d.low < 10 < d.high
    for shift, inside in (
        (d.low + 1e-9, True),
        (d.high - 1e-9, True),
        (d.low - 1e-6, False),
        (d.high + 1e-6, False),
    ):
        moved = [v - shift for v in after]
        assert exceedance_test(before, moved, 50.0).beyond_noise is (not inside), shift


def test_two_proportions_matches_the_textbook_z() -> None:
    # 950/1000 vs 900/1000: pooled p = 0.925, se = sqrt(0.925 * 0.075 * 0.002) = 0.011779, z = -4.245
    d = two_proportions(950, 1000, 900, 1000)
    assert d.delta == pytest.approx(-0.05)
    assert d.beyond_noise is True
    se = math.sqrt(0.95 * 0.05 / 1000 + 0.9 * 0.1 / 1000)  # unpooled, for the interval
    assert d.low == pytest.approx(-0.05 - 1.959964 * se) and d.high == pytest.approx(-0.05 + 1.959964 * se)
    # 950/1000 vs 940/1000: z = -0.01 / sqrt(0.945 * 0.055 * 0.002) = -0.98: within noise
    assert two_proportions(950, 1000, 940, 1000).beyond_noise is False
    assert two_proportions(9, 10, 5, 10).beyond_noise is None  # fewer than 30 events a side


def test_ceiling_use_and_advice() -> None:
    totals = list(range(1, 101))  # 1 .. 100 tokens
    use = from_requests(totals, ceiling=95, max_model_len=1000, source="test")
    assert (use.p50, use.p95, use.p99, use.largest) == (50, 95, 99, 100)
    assert use.coverage == pytest.approx(0.95)
    advice = " | ".join(use.advice)
    assert "KV waste: max-model-len 1000 is 10×" in advice  # 1000 > 4 x P99 (99)
    assert "pressure: P99 of 99 tokens is above 90%" in advice
    assert "only 95.00% of requests fit" in advice
    roomy = from_requests(totals, ceiling=396, max_model_len=396, source="test")
    assert roomy.advice == []  # 396 = 4 x 99 is not above it; 99 < 0.9 x 396; all fit


def test_warm_capacity_takes_the_latest_verdict_at_each_load() -> None:
    def run(i: int, load: float, ok: bool) -> StoredRun:
        return StoredRun(i, "sim", "small", float(i), 10.0, "rate", load, "p", "f", {}, ok, {})

    # 2/s and 4/s held, 8/s failed: capacity 4/s, bracket 8/s
    assert capacity_of([run(1, 2, True), run(2, 4, True), run(3, 8, False)]) == Capacity("rate", 4, 8, 3)
    # a later run at 4/s failed: the latest verdict at 4/s counts, so 2/s, bracket 4/s
    later = [run(1, 2, True), run(2, 4, True), run(3, 8, False), run(4, 4, False)]
    assert capacity_of(later) == Capacity("rate", 2, 4, 4)
    assert capacity_of([]) == Capacity(None, None, None, 0)
