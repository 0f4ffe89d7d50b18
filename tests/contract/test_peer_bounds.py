"""Clauses bounded from a file's quantiles (monitor/contract/peers/judge.py): on random samples,
the bounds computed from the percentiles a tool would report (numpy's linear definition, or the
inverse CDF) always contain the true number of good values, and decide only when the truth agrees.
The oracle is the samples themselves, counted; the percentiles are computed with ``statistics``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.contract.peers.judge import good_bounds
from monitor.contract.peers.model import LINEAR, NEAREST, Quantiles
from tests.contract.test_peer_formats import linear, nearest

POINTS = (50.0, 90.0, 95.0, 99.0)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(0.001, 5.0), min_size=1, max_size=60),
    threshold=st.floats(0.0, 5.0),
    method=st.sampled_from([LINEAR, NEAREST]),
    extremes=st.booleans(),
)
def test_bounds_contain_the_truth(values: list[float], threshold: float, method: str, extremes: bool) -> None:
    at = linear if method == LINEAR else nearest
    points = {p: at(values, p) for p in POINTS} if len(values) > 1 or method == NEAREST else {}
    q = Quantiles(len(values), method, points, None, min(values) if extremes else None,
                  max(values) if extremes else None)  # fmt: skip
    lo, hi = good_bounds(q, threshold)
    truth = sum(1 for v in values if v <= threshold)
    assert lo <= truth <= hi, (lo, truth, hi)


def test_bounds_decide_where_the_points_do() -> None:
    values = [0.1 * i for i in range(1, 21)]  # 20 values 0.1 … 2.0
    q = Quantiles(20, LINEAR, {p: linear(values, p) for p in POINTS}, None, 0.1, 2.0)
    assert good_bounds(q, 2.0) == (20, 20)  # the maximum is under: all good
    assert good_bounds(q, 0.05) == (0, 0)  # the minimum is over: none good
    lo, hi = good_bounds(q, 1.5)  # between P50 (1.05) and P90 (1.81): 15 good in truth
    assert lo <= 15 <= hi and (lo, hi) == (10, 18)
