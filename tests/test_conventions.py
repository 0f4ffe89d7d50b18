"""The naming and burn-rate conventions every generator and evaluator shares."""

from __future__ import annotations

import re

import pytest

from monitor import conventions as c


@pytest.mark.parametrize(
    ("period_days", "factors"), [(30, (14.4, 6.0, 3.0, 1.0)), (28, (13.44, 5.6, 2.8, 0.9333333))]
)
def test_burn_factors_follow_the_workbook(period_days: int, factors: tuple[float, ...]) -> None:
    got = tuple(a.factor(period_days * 86400) for a in c.BURN_ALERTS)
    assert got == pytest.approx(factors)


def test_short_windows_are_a_twelfth_of_long_ones() -> None:
    for alert in c.BURN_ALERTS:
        assert c.window_seconds(alert.short_window) * 12 == c.window_seconds(alert.long_window)


def test_windows_are_sorted_and_parse() -> None:
    seconds = [s for _, s in c.ROLLING_WINDOWS]
    assert seconds == sorted(seconds)
    assert all(c.window_seconds(w) == s for w, s in c.ROLLING_WINDOWS)
    assert c.period_window(30 * 86400) == "30d"


def test_metric_names_are_prometheus_legal_and_prefixed() -> None:
    names = [v for k, v in vars(c).items() if k.isupper() and isinstance(v, str) and v.startswith("m3mon_")]
    assert len(names) > 10
    for name in names:
        assert re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", name), name


def test_availability_failures_are_failure_categories() -> None:
    assert set(c.AVAILABILITY_FAILURES) < set(c.FAILURE_CATEGORIES)
    assert len(set(c.FAILURE_CATEGORIES)) == len(c.FAILURE_CATEGORIES) == 14
