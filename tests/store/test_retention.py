"""Retention prunes raw rows but keeps evaluations and the hourly rollups windows read."""

from __future__ import annotations

from sqlalchemy import func, select

from monitor.model import Model
from monitor.scrape.gpu_signals import GpuDeviceSignals, GpuSignals
from monitor.slo.evaluate import evaluate_counts
from monitor.store import Store
from monitor.store.ops import gpu_op, probe_op
from monitor.store.tables import EvaluationRow, EventSliceRow, GpuSampleRow, ProbeResultRow
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


def test_gpu_samples_are_written_once_and_pruned_with_the_raw_rows(store: Store, model: Model) -> None:
    """A GPU sample (gpu_op) is keyed by (endpoint, time): a replayed op stores nothing twice, and
    samples older than the retention go with the probe results they explain."""
    endpoint = model.endpoints[0].name
    device = GpuDeviceSignals("0", None, {"sm_active": 0.5}, {}, {})
    ops = [
        gpu_op(GpuSignals(endpoint, "dcgm", T0 + d * DAY, T0 + d * DAY - 60, {"0": device}))
        for d in range(20)
    ]
    store.apply([*ops, ops[-1]])
    store.prune(T0 + 20 * DAY, 14 * DAY)
    with store.session() as s:
        times = s.scalars(select(GpuSampleRow.time).order_by(GpuSampleRow.time)).all()
    assert times == [T0 + d * DAY for d in range(6, 20)]


def test_where_history_begins_outlives_the_pruned_slices(store: Store, model: Model) -> None:
    """The report labels a week partial from where the store's history begins: the first stored
    event's instant (docs/report.md), whatever retention pruned since."""
    from monitor.report.series import history_start

    first = probe(T0 + 1800)
    store.apply([probe_op(model, p) for p in (first, *(probe(T0 + d * DAY + 1800) for d in range(1, 20)))])
    now = T0 + 20 * DAY
    with store.session() as s:
        begins = history_start(s, now)
    assert begins is not None and begins >= first.started_at  # the first probe's outcome
    store.prune(now, 14 * DAY)
    with store.session() as s:
        assert s.scalar(select(func.min(EventSliceRow.end))) > begins  # its slices are gone
        assert history_start(s, now) == begins
