"""The noise tests of ``m3mon compare`` (pure Python; scipy is not a dependency).

* **Percentiles** (replay runs): a percentile bootstrap confidence interval of the difference
  ``P_q(after) − P_q(before)``: resample each run's per-request values with replacement
  (:data:`RESAMPLES` times, seeded), take the nearest-rank percentile of each resample and the
  difference; the 2.5th and 97.5th percentiles of those differences bound the 95 % interval. The
  change is *beyond noise* when the interval excludes 0. With fewer than :data:`MIN_SAMPLES`
  requests on a side the bootstrap interval is degenerate (two samples resample to three values),
  so there is no verdict.
* **SLO attainment** (good / total events before and after): the two-proportion z-test with a
  pooled proportion, two-sided at 5 % (|z| > 1.96); with fewer than :data:`MIN_EVENTS` events on
  a side, no verdict.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from monitor.probes.timing import percentile

RESAMPLES = 2000
Z_95 = 1.959964
MIN_EVENTS = 30
MIN_SAMPLES = 5


@dataclass(frozen=True)
class Difference:
    """``after − before`` with its 95 % interval and verdict (``None``: too little data)."""

    before: float | None
    after: float | None
    low: float | None = None
    high: float | None = None
    beyond_noise: bool | None = None

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before


def _rank(ordered: Sequence[float], q: float) -> float:
    return ordered[min(len(ordered), max(1, math.ceil(q / 100.0 * len(ordered)))) - 1]


def bootstrap_percentiles(
    before: Sequence[float],
    after: Sequence[float],
    qs: Sequence[float],
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[float, Difference]:
    """The bootstrap 95 % interval of ``P_q(after) − P_q(before)`` for each ``q`` (module docstring)."""
    point = {q: (percentile(before, q), percentile(after, q)) for q in qs}
    if len(before) < MIN_SAMPLES or len(after) < MIN_SAMPLES:
        return {q: Difference(*point[q]) for q in qs}
    rng = random.Random(seed)
    diffs: dict[float, list[float]] = {q: [] for q in qs}
    for _ in range(resamples):
        rb = sorted(rng.choices(before, k=len(before)))
        ra = sorted(rng.choices(after, k=len(after)))
        for q in qs:
            diffs[q].append(_rank(ra, q) - _rank(rb, q))
    out: dict[float, Difference] = {}
    for q in qs:
        d = sorted(diffs[q])
        low, high = d[int(0.025 * (resamples - 1))], d[math.ceil(0.975 * (resamples - 1))]
        out[q] = Difference(*point[q], low, high, low > 0 or high < 0)
    return out


def two_proportions(good_b: float, total_b: float, good_a: float, total_a: float) -> Difference:
    """Attainment before/after with the two-proportion z-test (interval: ±1.96 standard errors)."""
    pb = good_b / total_b if total_b else None
    pa = good_a / total_a if total_a else None
    if pb is None or pa is None or total_b < MIN_EVENTS or total_a < MIN_EVENTS:
        return Difference(pb, pa)
    pooled = (good_b + good_a) / (total_b + total_a)
    se_pooled = math.sqrt(pooled * (1 - pooled) * (1 / total_b + 1 / total_a))
    se = math.sqrt(pb * (1 - pb) / total_b + pa * (1 - pa) / total_a)
    delta = pa - pb
    if se_pooled == 0:
        return Difference(pb, pa, delta, delta, delta != 0)
    return Difference(pb, pa, delta - Z_95 * se, delta + Z_95 * se, abs(delta / se_pooled) > Z_95)
