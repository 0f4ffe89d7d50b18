"""The demo's store, kept to what its report reads: older raw rows go, old calm evaluations thin out.

Two weeks of history are written so the report compares its week with the week before. Of the
older days the report reads only event counts (the week before's attainment, budgets: the hourly
slice rollups answer them, as after a retention pass), scrape intervals (the bottleneck verdict's
baseline is the period before the week) and burning or exhausted evaluations (incidents look back
:data:`~monitor.store.queries.BURN_LOOKBACK` before the week). So, before the report is written:

* probe results, server spans and event slices ending more than :data:`MARGIN` before the report's
  week are deleted, the pruned horizon recorded as the retention pass records it (the hourly
  rollups are kept, so every window still counts those events);
* evaluations older than the burn lookback before the week are kept at whole hours only, except
  every burning or exhausted one (they are what incidents are derived from);
* the SQLite file is vacuumed.
"""

from __future__ import annotations

import math
import os
import sqlite3
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.orm import Session

from monitor.store import Store
from monitor.store.counts import HOUR, PRUNED_KEY, pruned_before, remember_history_start
from monitor.store.engine import sqlite_file
from monitor.store.queries import BURN_LOOKBACK, HOT
from monitor.store.tables import EvaluationRow, EventSliceRow, MetaRow, ProbeResultRow, ServerSpanRow

#: Raw rows kept before the report's week (a day: deployment comparisons look a day back).
MARGIN = 86400.0


@dataclass(frozen=True)
class Compacted:
    before: int  # bytes
    after: int
    probe_results: int
    server_spans: int
    event_slices: int
    evaluations: int

    def line(self) -> str:
        dropped = self.probe_results + self.server_spans + self.event_slices + self.evaluations
        if not dropped:
            return f"  store: {self.after / 1e6:.0f} MB"
        return (
            f"  store compacted: {self.before / 1e6:.0f} MB -> {self.after / 1e6:.0f} MB (dropped "
            f"{self.probe_results:,} probe results, {self.server_spans:,} spans and {self.event_slices:,} "
            f"event slices older than the report reads, thinned {self.evaluations:,} old calm evaluations "
            "to hourly)"
        )


def _delete(session: Session, raw_before: float, evaluations_before: float) -> tuple[int, ...]:
    e = EvaluationRow
    remember_history_start(session)
    stmts = (
        delete(ProbeResultRow).where(ProbeResultRow.started_at < raw_before),
        delete(ServerSpanRow).where(ServerSpanRow.start_time < raw_before),
        delete(EventSliceRow).where(EventSliceRow.end <= raw_before),
        delete(e).where(
            e.evaluated_at < evaluations_before, e.status.not_in(HOT), e.evaluated_at % HOUR != 0
        ),
    )
    counts = tuple(int(getattr(session.execute(s), "rowcount", 0)) for s in stmts)
    if raw_before > pruned_before(session):
        session.merge(MetaRow(key=PRUNED_KEY, value=raw_before))
    return counts


def compact(url: str, report_start: float) -> Compacted:
    """Compact the demo's SQLite store at ``url`` for a report whose week starts at ``report_start``."""
    path = sqlite_file(url)
    assert path is not None, url
    before = os.path.getsize(path)
    raw_before = math.floor((report_start - MARGIN) / HOUR) * HOUR  # whole hours: rollups answer exactly
    store = Store(url)
    try:
        with store.session() as session:
            counts = _delete(session, raw_before, report_start - BURN_LOOKBACK - HOUR)
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("VACUUM")
    conn.close()
    return Compacted(before, os.path.getsize(path), *counts)
