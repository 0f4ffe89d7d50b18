"""Retention prunes raw rows but keeps evaluations and the hourly rollups windows read."""

from __future__ import annotations

from sqlalchemy import func, select

from monitor.model import Model
from monitor.slo.evaluate import evaluate_counts
from monitor.store import Store
from monitor.store.ops import probe_op
from monitor.store.tables import EvaluationRow, EventSliceRow, ProbeResultRow
from tests.store.helpers import T0, probe

DAY = 86400.0


def test_prune_keeps_evaluations_and_period_counts(store: Store, model: Model) -> None:
    slo = model.request_class("interactive-32k").slos[0]  # availability from probes
    ops = [
        probe_op(model, probe(T0 + d * DAY + 1800, reason="timeout" if d == 0 else None)) for d in range(20)
    ]
    store.apply(ops)
    now = T0 + 20 * DAY
    before = evaluate_counts(slo, now, store.counts)
    store.save_evaluations([before])
    pruned = store.prune(now, 14 * DAY)
    # 3 probe SLOs per answered probe (availability, correctness, ttft-p99), 1 for the timeout
    assert (pruned.probe_results, pruned.event_slices) == (6, 1 + 5 * 3)
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(ProbeResultRow)) == 14
        assert s.scalar(select(func.count()).select_from(EventSliceRow)) == 14 * 3
        assert s.scalar(select(func.count()).select_from(EvaluationRow)) == 1
    after = evaluate_counts(slo, now, store.counts)
    period = after.window("30d")
    assert period is not None and (period.good, period.total) == (19.0, 20.0)
    assert after.window("30d") == before.window("30d")
