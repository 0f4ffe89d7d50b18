"""``m3mon compare``'s percentile test is calibrated (issue 26, finding 2): over many A/A pairs —
both runs drawn from one lognormal latency distribution — it says "beyond noise" at most 5 % of
the time (plus the simulation's error) at every sample size and percentile it gives a verdict for,
and it still finds a real shift. The percentile bootstrap it replaced said so 15-18 % of the time
at P95 for n = 5-10 and 8.5 % at P99 for n = 50."""

from __future__ import annotations

import math
import random

import pytest

from monitor.contract.compare import QS
from monitor.contract.stats import holm, percentile_tests

TRIALS = 600
#: 5 % plus three standard errors of a rate measured over TRIALS pairs.
BOUND = 0.05 + 3 * math.sqrt(0.05 * 0.95 / TRIALS)


def _draw(rng: random.Random, n: int, scale: float = 1.0) -> list[float]:
    return [scale * rng.lognormvariate(-1.0, 0.6) for _ in range(n)]


@pytest.mark.parametrize("n", [5, 10, 20, 50, 100, 300])
def test_false_positive_rate_at_most_five_percent(n: int) -> None:
    rng = random.Random(n)
    judged = dict.fromkeys(QS, 0)
    alarms = dict.fromkeys(QS, 0)
    for _ in range(TRIALS):
        for q, d in percentile_tests(_draw(rng, n), _draw(rng, n), QS).items():
            judged[q] += d.beyond_noise is not None
            alarms[q] += d.beyond_noise is True
    rates = {q: alarms[q] / TRIALS for q in QS}
    assert all(rate <= BOUND for rate in rates.values()), (n, rates, judged)
    # a verdict is all or nothing at a sample size: too few values above the percentile -> none
    assert all(count in (0, TRIALS) for count in judged.values()), judged
    assert judged[50.0] == TRIALS  # the median is always judged


@pytest.mark.parametrize(("n", "q", "scale", "power"), [(50, 50.0, 1.5, 0.5), (300, 95.0, 1.5, 0.8)])
def test_a_real_shift_is_found(n: int, q: float, scale: float, power: float) -> None:
    rng = random.Random(7)
    found = sum(
        bool(percentile_tests(_draw(rng, n), _draw(rng, n, scale), (q,))[q].beyond_noise) for _ in range(200)
    )
    assert found / 200 >= power  # measured: 71 % and 100 % (a test that never alarms is calibrated too)


#: A comparison of two replay runs tests TTFT, TPOT and e2e at P50, P95 and P99: nine rows.
ROWS = 9
COMPARISONS = 400


def _aa_comparisons(n: int, correct: bool) -> float:
    """Share of A/A comparisons (every metric drawn from one distribution on both sides, the nine
    rows independent: the worst case for a family) with at least one row beyond noise."""
    rng = random.Random(1000 + n)
    flagged = 0
    for _ in range(COMPARISONS):
        rows = [
            d
            for _ in range(ROWS // len(QS))
            for d in percentile_tests(_draw(rng, n), _draw(rng, n), QS).values()
        ]
        if correct:
            rows = holm(rows)
        flagged += any(d.beyond_noise for d in rows)
    return flagged / COMPARISONS


def test_a_comparison_holds_five_percent_as_a_whole() -> None:
    """Issue 41: each row near its 5 %, but a comparison of nine rows flagged something in about a
    quarter of A/A comparisons. Holm's correction holds the comparison to 5 % (plus three standard
    errors of the simulation) at the sample size where every row has a verdict."""
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / COMPARISONS)
    per_row = _aa_comparisons(300, correct=False)
    family = _aa_comparisons(300, correct=True)
    assert per_row > 2 * bound, per_row  # the uncorrected family: what the old output did
    assert family <= bound, family
