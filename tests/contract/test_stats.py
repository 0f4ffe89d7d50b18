"""The noise tests and the ceiling advice against hand-computed expectations."""

from __future__ import annotations

import math

import pytest

from monitor.contract.build import Capacity, capacity_of
from monitor.contract.ceiling import from_requests
from monitor.contract.stats import bootstrap_percentiles, two_proportions
from monitor.store.replays import StoredRun


def test_bootstrap_finds_a_shift_and_not_a_resample_of_the_same_values() -> None:
    before = [0.100 + 0.001 * i for i in range(100)]  # 0.100 .. 0.199
    shifted = [v + 0.05 for v in before]
    diff = bootstrap_percentiles(before, shifted, (50.0, 95.0))
    # nearest rank: P50 is the 50th value (0.149), P95 the 95th (0.194); the shift is 0.05 exactly
    assert diff[50.0].before == pytest.approx(0.149) and diff[50.0].delta == pytest.approx(0.05)
    assert diff[50.0].beyond_noise and diff[95.0].beyond_noise
    assert diff[50.0].low is not None and diff[50.0].low > 0
    same = bootstrap_percentiles(before, list(reversed(before)), (50.0, 99.0))
    assert same[50.0].delta == 0 and same[50.0].beyond_noise is False
    assert bootstrap_percentiles([1.0], [2.0], (50.0,))[50.0].beyond_noise is None  # too little data


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
