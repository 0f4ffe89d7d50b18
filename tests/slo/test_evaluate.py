"""Evaluation numbers checked by hand on constructed event streams."""

from __future__ import annotations

import pytest

from monitor.model import SLO
from monitor.slo.evaluate import evaluate_slices
from monitor.slo.slices import EventSlice
from monitor.slo.windows import week_start, windows_at

T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC (Thursday)
MONDAY = 1_767_571_200.0  # 2026-01-05 00:00 UTC
SLO_999 = SLO("chat", "availability", "availability", 0.999, 30 * 86400.0, "probes")


def sl(end: float, good: float, total: float, start: float | None = None) -> EventSlice:
    return EventSlice(
        SLO_999.id, "ep", "probe:chat", end if start is None else start, end, good, total, "probes"
    )


def test_zero_traffic_is_no_data_not_100_percent() -> None:
    ev = evaluate_slices(SLO_999, [], T0)
    assert ev.status == "no data"
    assert all(
        w.attainment is None and w.burn_rate is None and w.budget_remaining is None for w in ev.windows
    )


def test_burst_of_failures_pages() -> None:
    # 30 days of 1000 good events per hour, then 5 minutes where 100 of 200 events fail.
    stream = [sl(T0 + h * 3600, 1000, 1000) for h in range(1, 720)]
    now = T0 + 720 * 3600
    stream.append(sl(now - 60, 100, 200))
    ev = evaluate_slices(SLO_999, stream, now)
    w5m, w1h, w30d = ev.window("5m"), ev.window("1h"), ev.window("30d")
    assert w5m is not None and w1h is not None and w30d is not None
    assert w5m.attainment == pytest.approx(0.5) and w5m.burn_rate == pytest.approx(500)
    # 1h: (now-3600, now] holds the slice at now-3600? no: exclusive start -> only the burst
    assert (w1h.good, w1h.total) == (100, 200)
    # 30d: 719 good hours minus the first one outside (T0+3600 is inside (now-30d, now]) -> 719*1000 + burst
    assert w30d.total == 719 * 1000 + 200 and w30d.good == 719 * 1000 + 100
    assert w30d.burn_rate == pytest.approx((100 / 719_200) / 0.001)
    assert w30d.budget_remaining == pytest.approx(1 - (100 / 719_200) / 0.001)
    assert ev.status == "burning" and ev.severity == "page"


def test_exhausted_budget_goes_negative() -> None:
    ev = evaluate_slices(SLO_999, [sl(T0 - 86400 * 10, 900, 1000)], T0)
    w30d = ev.window("30d")
    assert w30d is not None and w30d.budget_remaining == pytest.approx(1 - 0.1 / 0.001)  # -99
    assert ev.status == "exhausted"


def test_window_edges_exclusive_start_inclusive_end() -> None:
    at = T0 + 3600
    stream = [sl(at - 300, 0, 1), sl(at, 1, 1), sl(at - 3600, 0, 5)]
    ev = evaluate_slices(SLO_999, stream, at)
    w5m, w1h = ev.window("5m"), ev.window("1h")
    assert w5m is not None and (w5m.good, w5m.total) == (1, 1)  # at-300 is the 5m window's excluded start
    assert w1h is not None and (w1h.good, w1h.total) == (1, 2)  # at-3600 excluded, at-300 and at included


def test_calendar_week_starts_monday_utc() -> None:
    assert week_start(MONDAY + 5) == MONDAY and week_start(MONDAY - 1) == MONDAY - 7 * 86400
    assert week_start(MONDAY) == MONDAY
    stream = [
        sl(MONDAY, 0, 10),
        sl(MONDAY + 1, 1, 1),
    ]  # a slice ending exactly at Monday 00:00 is last week's
    ev = evaluate_slices(SLO_999, stream, MONDAY + 3600)
    week = ev.window("week")
    assert week is not None and (week.start, week.good, week.total) == (MONDAY, 1, 1)
    month = ev.window("month")
    assert month is not None and month.start == T0 and month.total == 11


def test_windows_cover_rolling_period_and_calendar() -> None:
    names = [w.name for w in windows_at(SLO_999, T0)]
    assert names == ["5m", "30m", "1h", "2h", "6h", "1d", "3d", "30d", "week", "month"]
    slo28 = SLO("c", "a", "availability", 0.99, 28 * 86400.0, "probes")
    assert [w.name for w in windows_at(slo28, T0)][7] == "28d"


def test_ticket_burn_without_page() -> None:
    # 0.4 % errors for a steady day: burn 4 > 3 on 1d and 2h, below 6 and 14.4; the 29 clean days
    # before keep the period's burn at ~0.13, so the budget is not exhausted.
    stream = [sl(T0 - h * 3600, 60_000, 60_000) for h in range(0, 29 * 24)]
    stream += [sl(T0 + m * 60, 996, 1000) for m in range(1, 1441)]
    ev = evaluate_slices(SLO_999, stream, T0 + 1440 * 60)
    w1h = ev.window("1h")
    assert w1h is not None and w1h.burn_rate == pytest.approx(4.0)
    assert (ev.status, ev.severity) == ("burning", "ticket")
