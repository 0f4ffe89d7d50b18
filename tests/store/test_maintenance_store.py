"""Maintenance in the store: excluded slices are kept, named, and counted in no window.

Six hours of one probe a minute on m3-interactive (T0 = 2026-01-01 00:00 UTC), started at
00:01 .. 06:00, each completing 3 s later (its event instant); those started 02:00 .. 04:00 fail.
A maintenance window holds (02:00, 04:00]. By hand, over (00:00, 06:00]: the probes started
00:01 .. 05:59 complete inside (359); those started 02:00 .. 03:59 (120) complete in maintenance;
239 count, and one of them fails (started 04:00, completing 04:00:03, after the window).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from monitor.config import parse_config
from monitor.model import Model, build_model
from monitor.store import Store
from monitor.store.counts import rebuild_rollups
from monitor.store.ops import probe_op
from monitor.store.tables import EventSliceRow, SliceRollupRow
from tests.store.helpers import T0, probe

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
WINDOW = """maintenance:
  - name: driver-update
    start: 2026-01-01T02:00:00Z
    duration: 2h
    endpoints: [m3-interactive]
    reason: NVIDIA driver 580
"""
AVAILABILITY = "interactive-32k/availability"


def _model() -> Model:
    text = EXAMPLE.read_text() + "\n" + WINDOW
    return build_model(parse_config(text, "monitor.yaml"))


def _load(store: Store, model: Model) -> None:
    ops = []
    for minute in range(1, 361):
        at = T0 + minute * 60
        failing = 2 * 60 <= minute <= 4 * 60  # 02:00..04:00 inclusive fail
        result = probe(at, reason="connect_error" if failing else None)
        ops.append(probe_op(model, result))
    store.apply(ops)


def test_maintenance_slices_are_kept_but_count_nowhere(store: Store) -> None:
    model = _model()
    _load(store, model)
    # (00:00, 06:00] spans whole hours (rollups) and (01:30, 04:30] has ragged ends (raw slices)
    assert store.counts(AVAILABILITY, T0, T0 + 6 * 3600) == (238.0, 239.0)
    # (01:30, 04:30]: started 01:30 .. 04:29 (180), less the 120 in maintenance; 04:00 fails
    assert store.counts(AVAILABILITY, T0 + 5400, T0 + 16200) == (59.0, 60.0)
    with store.session() as session:
        s = EventSliceRow
        kept = session.execute(
            select(func.count(), func.sum(s.total - s.good)).where(
                s.slo_id == AVAILABILITY, s.maintenance == "driver-update"
            )
        ).one()
        assert tuple(kept) == (120, 120)  # (02:00, 04:00]: 02:01 .. 04:00, all failing
        assert (
            session.scalar(
                select(func.sum(SliceRollupRow.total)).where(SliceRollupRow.slo_id == AVAILABILITY)
            )
            == 240
        )


def test_rebuilt_rollups_leave_maintenance_out_too(store: Store) -> None:
    _load(store, _model())
    with store.session() as session:
        rebuild_rollups(session)
    assert store.counts(AVAILABILITY, T0, T0 + 6 * 3600) == (238.0, 239.0)
