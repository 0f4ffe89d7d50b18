"""The charts' time series: a step fitted to the data, and each SLO's points at every step.

The step is the shortest of :data:`STEPS` that covers the stretch from the first event of the
period to its end in at most :data:`MAX_POINTS` points, so three minutes of data get minute points
and a week gets three-hourly ones. Points sit on multiples of the step (UTC) after the first
event, plus one at the end of the data. Each holds the attainment from the period's start to it,
the budget left over the SLO period ending at it, and the events in its step (none: a gap).
Windows whose ends lie on whole hours are counted from the SLO's hourly rollups read once
(:class:`HourlySums`, the same rows :class:`monitor.store.counts.EventCounts` reads for them);
the others, e.g. the last point at the report's end, through :class:`EventCounts` itself.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from datetime import datetime
from itertools import accumulate

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.model import SLO
from monitor.report.data import SeriesPoint, SLOSeries
from monitor.report.events import Windows
from monitor.slo.evaluate import WindowResult, window_result
from monitor.slo.windows import Window
from monitor.store.counts import history_started
from monitor.store.tables import EventSliceRow, SliceRollupRow

HOUR = 3600.0
STEPS = (60.0, 300.0, 900.0, 3600.0, 3 * 3600.0, 6 * 3600.0, 12 * 3600.0, 86400.0)
MAX_POINTS = 60


def first_event(session: Session, start: float, end: float) -> float | None:
    """End of the earliest event slice in ``(start, end]`` (any SLO); None when there is none."""
    s = EventSliceRow
    value = session.scalar(select(func.min(s.end)).where(s.end > start, s.end <= end))
    return float(value) if value is not None else None


def history_start(session: Session, end: float) -> float | None:
    """End of the store's earliest event slice up to ``end`` (any SLO): where its history begins."""
    s = EventSliceRow
    value = session.scalar(select(func.min(s.end)).where(s.end <= end))
    remembered = history_started(session)  # from before raw slices were pruned
    found = [float(v) for v in (value, remembered) if v is not None and v <= end]
    return min(found) if found else None


def step_for(start: float, end: float) -> float:
    """The shortest step that covers ``(start, end]`` in at most MAX_POINTS points."""
    extent = max(0.0, end - start)
    return next((s for s in STEPS if extent / s <= MAX_POINTS - 1), STEPS[-1])


def points(first: float, end: float) -> tuple[list[float], float]:
    """The instants of the series and its step: the step boundary at or before ``first`` (opening
    the first step), every boundary after it before ``end``, and ``end``."""
    step = step_for(first, end)
    return [math.floor(first / step) * step, *instants(first, end, step)], step


def instants(first: float, end: float, step: float) -> list[float]:
    """Multiples of ``step`` after ``first`` and before ``end``, then ``end`` itself."""
    k = math.floor(first / step) + 1
    out = []
    while k * step < end:
        out.append(k * step)
        k += 1
    return [*out, end]


class HourlySums:
    """One SLO's hourly rollups in ``(lo, hi]``, as prefix sums: the counts of a window whose ends
    both lie on hour boundaries (the store's whole-hour rule, :class:`EventCounts`), from memory."""

    def __init__(self, session: Session, slo_id: str, lo: float, hi: float) -> None:
        r = SliceRollupRow
        q = select(r.hour_end, r.good, r.total).where(r.slo_id == slo_id, r.hour_end > lo, r.hour_end <= hi)
        rows = session.execute(q.order_by(r.hour_end)).all()
        self.lo, self.hi = lo, hi
        self.ends = [float(e) for e, _, _ in rows]
        self.good = [0.0, *accumulate(float(g) for _, g, _ in rows)]
        self.total = [0.0, *accumulate(float(t) for _, _, t in rows)]

    def counts(self, a: float, b: float) -> tuple[float, float] | None:
        """(good, total) of ``(a, b]``; None unless both are hour boundaries inside the loaded range."""
        if a % HOUR or b % HOUR or a < self.lo or b > self.hi or b <= a:
            return None
        i, j = bisect_right(self.ends, a), bisect_right(self.ends, b)
        return self.good[j] - self.good[i], self.total[j] - self.total[i]


def _result(
    w: Windows, hours: HourlySums, slo: SLO, a: float, b: float, name: str = "report"
) -> WindowResult:
    counted = hours.counts(a, b)
    return w.result(slo, a, b, name) if counted is None else window_result(slo, Window(name, a, b), *counted)


def slo_series(w: Windows, slo: SLO, start: float, points: list[float], tz: object) -> SLOSeries:
    """``slo`` at each of ``points`` (the first one opens the first step and is not drawn)."""
    hours = HourlySums(w.counts.session, slo.id, min(start, points[0]) - slo.period - HOUR, points[-1])
    out, before = [], _result(w, hours, slo, start, points[0]).total
    for at in points[1:]:
        cumulative = _result(w, hours, slo, start, at)
        budget = _result(w, hours, slo, at - slo.period, at, slo.period_window).budget_remaining
        when = datetime.fromtimestamp(at, tz)  # type: ignore[arg-type]
        out.append(SeriesPoint(when, cumulative.attainment, budget, cumulative.total - before))
        before = cumulative.total
    return SLOSeries(slo.request_class, slo.name, slo.objective, tuple(out))
