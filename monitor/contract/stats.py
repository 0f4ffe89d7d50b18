"""The noise tests of ``m3mon compare`` (pure Python; scipy is not a dependency).

* **Percentiles** (replay runs): the *exceedance test* of ``P_q``, an exact permutation test. Pool
  both runs' per-request values, take the pooled nearest-rank ``P_q`` and count the ``k`` pooled
  values strictly above it; if both runs come from one distribution, which of them each value
  came from is a random draw, so the number of ``after`` values among those ``k`` is
  hypergeometric (``N`` pooled, ``n_after`` drawn, ``k`` marked) — ties included. The change is
  *beyond noise* when the two-sided exact p-value (sum of the probabilities no larger than the
  observed one) is at most :data:`ALPHA`. Its false-positive rate is at most 5 % at every sample
  size (tests/contract/test_compare_calibration.py measures it); where no outcome could reach
  ``ALPHA`` (too few values above the percentile: P95 needs about 60 requests a side, P99 about
  300) there is **no verdict** ("not enough data") instead of a guess. The interval is the same
  test inverted: the shifts ``d`` for which ``after − d`` would not be beyond noise (a location
  shift of the percentile, distribution-free). The percentile bootstrap it replaces said "beyond
  noise" in 15–18 % of A/A comparisons at P95 for n = 5–10.
* **SLO attainment** (good / total events before and after): the two-proportion z-test with a
  pooled proportion, two-sided at 5 % (|z| > 1.96); with fewer than :data:`MIN_EVENTS` events on
  a side, no verdict.
* **One comparison, many rows**: a comparison tests about nine rows, and 5 % per row is about a
  one-in-four chance per comparison that some row reads "beyond noise" by chance. :func:`holm`
  applies Holm's step-down correction over a comparison's tested rows, so a comparison of two
  runs of one system says "beyond noise" anywhere at most 5 % of the time (family-wise); each
  row keeps its own p-value and 95 % interval (tests/contract/test_compare_calibration.py).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from monitor.probes.timing import percentile

ALPHA = 0.05
NOT_ENOUGH = "not enough data"
Z_95 = 1.959964
MIN_EVENTS = 30
#: Relative slack when comparing hypergeometric probabilities (as scipy's ``fisher_exact`` does).
_TIES = 1e-7


@dataclass(frozen=True)
class Difference:
    """``after − before`` with its 95 % interval and verdict (``None``: too little data).
    A bound is ``None`` when the data cannot bound the difference on that side."""

    before: float | None
    after: float | None
    low: float | None = None
    high: float | None = None
    beyond_noise: bool | None = None
    why_no_verdict: str = "no test"  # shown when beyond_noise is None
    p_value: float | None = None  # the row's own two-sided p-value (None: no test)

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before


class _Hypergeometric:
    """How many of ``k`` marked values fall among ``n`` drawn from ``total``."""

    def __init__(self, total: int, n: int, k: int) -> None:
        self.lo, self.hi = max(0, n - (total - k)), min(k, n)
        log_all = _log_comb(total, n)
        self.pmf = [math.exp(_log_comb(k, c) + _log_comb(total - k, n - c) - log_all) for c in self.support]
        self._sorted = sorted(self.pmf)
        self._cumulative = list(itertools.accumulate(self._sorted))

    @property
    def support(self) -> range:
        return range(self.lo, self.hi + 1)

    def p_value(self, c: int) -> float:
        """Two-sided: the probability of an outcome no more likely than ``c``."""
        at = bisect.bisect_right(self._sorted, self.pmf[c - self.lo] * (1 + _TIES))
        return min(1.0, self._cumulative[at - 1]) if at else 0.0

    def accepted(self) -> range | None:
        """The outcomes not beyond noise (contiguous: the distribution is unimodal); None when
        every outcome is accepted (no verdict possible)."""
        ok = [c for c in self.support if self.p_value(c) > ALPHA]
        return None if len(ok) == len(self.support) else range(ok[0], ok[-1] + 1)


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _above(values: Sequence[float], q: float) -> int:
    """How many values lie above the nearest-rank ``P_q`` when all are distinct."""
    return len(values) - max(1, math.ceil(q / 100.0 * len(values)))


def _interval(
    before: Sequence[float], after: Sequence[float], k: int, ok: range
) -> tuple[float | None, float | None]:
    """Shifts ``d`` with ``after − d`` not beyond noise: with ``a``/``b`` sorted descending, at
    least ``c`` after-values are among the top ``k`` exactly when ``d < a[c] − b[k − c + 1]``."""
    a, b = sorted(after, reverse=True), sorted(before, reverse=True)
    c_lo, c_hi = ok[0], ok[-1]
    high = a[c_lo - 1] - b[k - c_lo] if c_lo >= 1 and k - c_lo < len(b) else None
    low = a[c_hi] - b[k - c_hi - 1] if c_hi < len(a) and k - c_hi >= 1 else None
    return low, high


def exceedance_test(before: Sequence[float], after: Sequence[float], q: float) -> Difference:
    """``P_q(after) − P_q(before)`` with the exceedance test's verdict and interval (module docstring)."""
    point = (percentile(before, q), percentile(after, q))
    pooled = [*before, *after]
    threshold = percentile(pooled, q)
    if not before or not after or threshold is None:
        return Difference(*point, why_no_verdict=NOT_ENOUGH)
    marked = sum(1 for v in pooled if v > threshold)
    test = _Hypergeometric(len(pooled), len(after), marked)
    if test.accepted() is None:
        return Difference(*point, why_no_verdict=NOT_ENOUGH)
    p = test.p_value(sum(1 for v in after if v > threshold))
    k = _above(pooled, q)
    ok = _Hypergeometric(len(pooled), len(after), k).accepted()
    low, high = _interval(before, after, k, ok) if ok is not None else (None, None)
    return Difference(*point, low, high, p <= ALPHA, p_value=p)


def percentile_tests(
    before: Sequence[float], after: Sequence[float], qs: Sequence[float]
) -> dict[float, Difference]:
    """:func:`exceedance_test` for each ``q``."""
    return {q: exceedance_test(before, after, q) for q in qs}


def two_proportions(good_b: float, total_b: float, good_a: float, total_a: float) -> Difference:
    """Attainment before/after with the two-proportion z-test (interval: ±1.96 standard errors)."""
    pb = good_b / total_b if total_b else None
    pa = good_a / total_a if total_a else None
    if pb is None or pa is None or total_b < MIN_EVENTS or total_a < MIN_EVENTS:
        return Difference(pb, pa, why_no_verdict=NOT_ENOUGH)
    pooled = (good_b + good_a) / (total_b + total_a)
    se_pooled = math.sqrt(pooled * (1 - pooled) * (1 / total_b + 1 / total_a))
    se = math.sqrt(pb * (1 - pb) / total_b + pa * (1 - pa) / total_a)
    delta = pa - pb
    if se_pooled == 0:
        return Difference(pb, pa, delta, delta, delta != 0, p_value=0.0 if delta != 0 else 1.0)
    z = abs(delta / se_pooled)
    p = math.erfc(z / math.sqrt(2.0))
    return Difference(pb, pa, delta - Z_95 * se, delta + Z_95 * se, z > Z_95, p_value=p)


def holm(rows: Sequence[Difference], alpha: float = ALPHA) -> list[Difference]:
    """``rows`` with their verdicts corrected by Holm's step-down procedure (family-wise ``alpha``):
    sorted by p-value, the i-th smallest (from 0) of ``m`` tested rows is beyond noise while each
    before it was and its p-value is at most ``alpha / (m - i)``. Rows without a test are kept."""
    tested = sorted(
        (d.p_value, i) for i, d in enumerate(rows) if d.beyond_noise is not None and d.p_value is not None
    )
    m, out, rejecting = len(tested), list(rows), True
    for rank, (p, i) in enumerate(tested):
        rejecting = rejecting and p <= alpha / (m - rank)
        out[i] = dataclasses.replace(rows[i], beyond_noise=rejecting)
    return out
