"""Good/total event counts of an SLO over a window, from raw slices and hourly rollups.

Slices excluded by a maintenance window (``maintenance`` set) count nowhere: not in raw sums,
not in rollups. A window ``(a, t]`` is split on hour boundaries: the whole hours inside it are read from
``slice_rollups`` (one row per SLO per hour) and the ragged ends ``(a, A]`` and ``(B, t]`` from
``event_slices`` via the ``(slo_id, end)`` index. A 30-day window thus reads ~720 rollup rows
and at most ~2 hours of raw slices instead of every slice of the month.

Raw slices older than the retention are pruned (rollups are kept). When the ragged head of a
window lies before the pruned horizon, the whole hour holding it is taken from the rollup, so the
window is widened by less than an hour (documented in docs/store-and-slo.md).
"""

from __future__ import annotations

import math

from sqlalchemy import ColumnElement, Integer, case, cast, delete, func, insert, select
from sqlalchemy.orm import Session

from monitor.store.tables import EventSliceRow, MetaRow, SliceRollupRow

HOUR = 3600.0
PRUNED_KEY = "slices_pruned_before"


#: The end of the store's earliest event slice, remembered before raw slices are pruned (the
#: report's "where history begins" outlives the slices; the hourly rollups keep their counts).
HISTORY_START_KEY = "history_starts_at"


def remember_history_start(session: Session) -> None:
    """Record where the store's history begins, before a prune deletes raw slices."""
    first = session.scalar(select(func.min(EventSliceRow.end)))
    if first is None:
        return
    known = history_started(session)
    if known is None or first < known:
        session.merge(MetaRow(key=HISTORY_START_KEY, value=float(first)))


def history_started(session: Session) -> float | None:
    """Where the store's history began as remembered before a prune (None: never pruned)."""
    row = session.get(MetaRow, HISTORY_START_KEY)
    return row.value if row is not None else None


def pruned_before(session: Session) -> float:
    """Slices ending at or before this time may have been pruned (0 when nothing was)."""
    row = session.get(MetaRow, PRUNED_KEY)
    return row.value if row is not None else 0.0


def newest_event(session: Session, slo_ids: list[str], at: float) -> float | None:
    """The end of the newest stored slice (excluded by maintenance or not) of any of ``slo_ids``
    at or before ``at``; an hourly rollup's end when the raw slices were pruned; None when the
    store holds no event of them."""
    raw = session.scalar(
        select(func.max(EventSliceRow.end)).where(EventSliceRow.slo_id.in_(slo_ids), EventSliceRow.end <= at)
    )
    if raw is not None:
        return float(raw)
    rolled = session.scalar(
        select(func.max(SliceRollupRow.hour_end)).where(
            SliceRollupRow.slo_id.in_(slo_ids), SliceRollupRow.hour_end <= at
        )
    )
    return None if rolled is None else float(rolled)


class EventCounts:
    """Answers ``counts(slo_id, start, end)`` for the evaluator over one session."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.horizon = pruned_before(session)

    def _raw(self, slo_id: str, start: float, end: float) -> tuple[float, float]:
        if end <= start:
            return 0.0, 0.0
        s = EventSliceRow
        q = select(func.coalesce(func.sum(s.good), 0.0), func.coalesce(func.sum(s.total), 0.0))
        where = (s.slo_id == slo_id, s.end > start, s.end <= end, s.maintenance.is_(None))
        row = self.session.execute(q.where(*where)).one()
        return float(row[0]), float(row[1])

    def _hours(self, slo_id: str, first_end: float, last_end: float) -> tuple[float, float]:
        if last_end < first_end:
            return 0.0, 0.0
        r = SliceRollupRow
        q = select(func.coalesce(func.sum(r.good), 0.0), func.coalesce(func.sum(r.total), 0.0))
        row = self.session.execute(
            q.where(r.slo_id == slo_id, r.hour_end >= first_end, r.hour_end <= last_end)
        ).one()
        return float(row[0]), float(row[1])

    def counts(self, slo_id: str, start: float, end: float) -> tuple[float, float]:
        """(good, total) over slices ending in ``(start, end]``."""
        head_end = math.ceil(start / HOUR) * HOUR  # first hour boundary at or after start
        tail_start = math.floor(end / HOUR) * HOUR  # last hour boundary at or before end
        if tail_start <= head_end:
            return self._raw(slo_id, start, end)
        if start < self.horizon and head_end > start:
            head_end -= HOUR  # raw head pruned: take its whole hour from the rollup
            head = (0.0, 0.0)
        else:
            head = self._raw(slo_id, start, head_end)
        mid = self._hours(slo_id, head_end + HOUR, tail_start)
        tail = self._raw(slo_id, tail_start, end)
        return head[0] + mid[0] + tail[0], head[1] + mid[1] + tail[1]


def hour_end_sql(session: Session) -> ColumnElement[float]:
    """SQL for the rollup hour of a slice: ceil(end / 3600) * 3600 on either dialect."""
    x = EventSliceRow.end / HOUR
    if session.get_bind().dialect.name == "postgresql":
        return func.ceil(x) * HOUR
    whole = cast(x, Integer)  # SQLite truncates toward zero: floor for positive times
    return case((whole < x, whole + 1), else_=whole) * HOUR


def rebuild_rollups(session: Session) -> int:
    """Recompute hourly rollups from the raw slices (for repair and bulk loads); returns rows written.

    Only hours entirely after the pruned horizon are rebuilt; older rollups are kept as they are.
    """
    first = math.floor(pruned_before(session) / HOUR) * HOUR + 2 * HOUR
    session.execute(delete(SliceRollupRow).where(SliceRollupRow.hour_end >= first))
    s = EventSliceRow
    hour = hour_end_sql(session).label("hour_end")
    grouped = (
        select(s.slo_id, hour, func.sum(s.good), func.sum(s.total))
        .where(s.end > first - HOUR, s.maintenance.is_(None))
        .group_by(s.slo_id, hour)
    )
    cols = ("slo_id", "hour_end", "good", "total")
    result = session.execute(insert(SliceRollupRow).from_select(cols, grouped))
    return int(getattr(result, "rowcount", 0))
