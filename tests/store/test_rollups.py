"""Hourly rollups hold exactly the events of the stored slices, whatever a batch repeats.

The oracle is the raw table itself: for every (SLO, hour) the rollup must equal the sum of the
counted slices the database kept, read back with plain SQL.
"""

from __future__ import annotations

import math

from sqlalchemy import func, select

from monitor.slo.slices import EventSlice
from monitor.store import Store
from monitor.store.ops import slices_op
from monitor.store.tables import EventSliceRow, SliceRollupRow

T = 1_769_904_000.0 + 600.0


def _slice(end: float, good: float, total: float) -> EventSlice:
    return EventSlice("chat/availability", "ep-a", "server", end - 15.0, end, good, total, "server")


def _raw_and_rollups(
    store: Store,
) -> tuple[dict[float, tuple[float, float]], dict[float, tuple[float, float]]]:
    s, r = EventSliceRow, SliceRollupRow
    with store.session() as session:
        raw: dict[float, list[float]] = {}
        for end, good, total in session.execute(
            select(s.end, s.good, s.total).where(s.maintenance.is_(None))
        ):
            acc = raw.setdefault(math.ceil(end / 3600) * 3600, [0.0, 0.0])
            acc[0], acc[1] = acc[0] + good, acc[1] + total
        rolled = {
            float(h): (float(g), float(t)) for h, g, t in session.execute(select(r.hour_end, r.good, r.total))
        }
        kept = session.execute(select(func.count()).select_from(s)).scalar_one()
    assert kept == 2
    return {h: (v[0], v[1]) for h, v in raw.items()}, rolled


def test_a_key_twice_in_one_batch_is_counted_once(store: Store) -> None:
    """Two slices with one key in one write: the database keeps one, the rollup counts that one
    (it counted both: 9 events rolled up where 5 were stored — the incremental evaluator, which
    reads rollups, then disagreed with the per-window one, which reads raw slices)."""
    store.apply([slices_op([_slice(T, 2.0, 3.0), _slice(T, 3.0, 4.0), _slice(T + 60.0, 1.0, 2.0)])])
    raw, rolled = _raw_and_rollups(store)
    assert rolled == raw
