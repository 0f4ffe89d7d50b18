"""Evaluations that wait for the fleet and never keep a partial count (issue 22 finding 5).

On SQLite and PostgreSQL: a write that lands after its step was evaluated marks the SLO dirty and
the next evaluation replaces that step with the full count; the evaluator announces how far it
evaluates before reading, and on PostgreSQL a write in flight holds the announcement back until it
commits, so no write is missed by both; the fleet's horizon is the slowest live replica's, never
older than the stated bound. Counts are checked against the events written, by hand.
"""

from __future__ import annotations

import threading
import time

import pytest

from monitor.model import Model
from monitor.slo.due import evaluate_due
from monitor.store import Store
from monitor.store.ops import probe_op
from monitor.store.progress import FINAL_STEPS, LIVE_SLACK, LIVE_STEPS
from monitor.store.rows import write_slices
from tests.store.helpers import T0, probe

SLO = "interactive-32k/availability"


def _window(store: Store, at: float, window: str = "5m") -> tuple[float, float]:
    (ev,) = [e for e in store.latest_evaluations(at) if e.slo_id == SLO]
    assert ev.evaluated_at == at
    w = next(w for w in ev.windows if w.window == window)
    return w.good, w.total


def test_a_late_write_re_evaluates_the_steps_it_changes(store: Store, model: Model) -> None:
    """A replica's probe completing at T0+40 arrives after T0+60 and T0+120 were evaluated: both
    steps are evaluated again with it; steps it does not touch are left alone."""
    store.apply([probe_op(model, probe(T0 + 10))])  # completes at T0 + 13 (e2e 3 s)
    evaluate_due(store, model, T0 + 60)
    evaluate_due(store, model, T0 + 120)
    assert _window(store, T0 + 60) == (1.0, 1.0) and _window(store, T0 + 120) == (1.0, 1.0)
    store.apply([probe_op(model, probe(T0 + 37, reason="timeout"))])  # completes at T0 + 40: late
    assert store.any_dirty()
    again = evaluate_due(store, model, T0 + 125)
    assert {e.evaluated_at for e in again if e.slo_id == SLO} == {T0 + 60, T0 + 120}
    assert _window(store, T0 + 60) == (1.0, 2.0) and _window(store, T0 + 120) == (1.0, 2.0)
    assert not store.any_dirty()
    assert evaluate_due(store, model, T0 + 125) == []  # nothing left to do


def test_a_late_write_behind_the_fleet_horizon_is_never_lost(store: Store, model: Model) -> None:
    """Fleet mode evaluates up to the slowest replica's horizon, which falls behind the last
    evaluated step exactly when late writes arrive. The old evaluator redid the dirty steps up to
    the horizon and cleared the mark: T0+180 kept (1 good, 1 total) for good, without the late
    timeout in its 5m window. The mark now stays on the steps the horizon has not reached."""
    store.apply([probe_op(model, probe(T0 + 10))])
    for at in (60, 120, 180):
        evaluate_due(store, model, T0 + at)
    store.apply([probe_op(model, probe(T0 + 37, reason="timeout"))])  # completes at T0 + 40: late
    evaluate_due(store, model, T0 + 125)  # the fleet's horizon: behind T0 + 180
    assert _window(store, T0 + 120) == (1.0, 2.0) and store.any_dirty()
    evaluate_due(store, model, T0 + 185)
    assert _window(store, T0 + 180) == (1.0, 2.0) and not store.any_dirty()


def test_a_late_write_after_the_horizon_waits_for_it(store: Store, model: Model) -> None:
    """A late write whose first changed step is after the horizon: nothing can be redone yet, and
    the mark stays (the old evaluator cleared it: T0+180 never saw the timeout)."""
    store.apply([probe_op(model, probe(T0 + 10))])
    for at in (60, 120, 180):
        evaluate_due(store, model, T0 + at)
    store.apply([probe_op(model, probe(T0 + 147, reason="timeout"))])  # completes at T0 + 150
    assert evaluate_due(store, model, T0 + 125) == [] and store.any_dirty()
    evaluate_due(store, model, T0 + 185)
    assert _window(store, T0 + 180) == (1.0, 2.0) and not store.any_dirty()


def test_a_write_before_anything_was_evaluated_marks_nothing(store: Store, model: Model) -> None:
    store.apply([probe_op(model, probe(T0 + 10))])
    assert not store.any_dirty()
    evaluate_due(store, model, T0 + 60)
    store.apply([probe_op(model, probe(T0 + 70))])  # after the evaluated step: on time
    assert not store.any_dirty()


def test_the_fleet_waits_for_its_slowest_live_replica_and_no_longer_than_the_bound(store: Store) -> None:
    step, now = 60.0, T0 + 3600
    store.report_progress("0-a", now - 5, now)
    store.report_progress("0-b", now - 200, now - 10)  # its spool holds writes from 200 s ago
    assert store.fleet_complete_until(now, now - 5, step) == now - 200
    store.report_progress("1-a", now - 900, now - LIVE_STEPS * step - LIVE_SLACK - 1)  # not live
    assert store.fleet_complete_until(now, now - 5, step) == now - 200
    store.report_progress("0-b", now - 4000, now)  # far behind, but the bound holds
    assert store.fleet_complete_until(now, now - 5, step) == now - FINAL_STEPS * step


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)  # SQLite serializes every write anyway
def test_a_write_in_flight_holds_back_the_announcement_until_it_commits(store: Store, model: Model) -> None:
    """PostgreSQL: the announcement waits for the share lock a writer holds on the progress row,
    so the evaluation that follows it reads the write."""
    assert store.engine.dialect.name == "postgresql"
    evaluate_due(store, model, T0 + 60)  # the progress rows exist from here on
    slice_ = {"slo_id": SLO, "endpoint": "m3-interactive", "origin": "probe:chat", "source": "probes",
              "start": T0 + 90.0, "end": T0 + 90.0, "good": 0.0, "total": 1.0, "exact": True}  # fmt: skip
    written, announced = threading.Event(), threading.Event()

    def writer() -> None:
        with store.session() as s:
            write_slices(s, [slice_])
            written.set()
            time.sleep(1.0)  # the transaction stays open: the announcement must wait

    def evaluator() -> None:
        written.wait(10)
        store.announce({SLO: T0 + 120})
        announced.set()

    threads = [threading.Thread(target=writer), threading.Thread(target=evaluator)]
    for t in threads:
        t.start()
    assert written.wait(10)
    assert not announced.wait(0.5), "the announcement did not wait for the write in flight"
    for t in threads:
        t.join(15)
    assert announced.is_set()
    evaluate_due(store, model, T0 + 120)
    assert _window(store, T0 + 120) == (0.0, 1.0)
