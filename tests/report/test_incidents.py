"""Incidents derived from the stored burn evaluations, joined to the alerts Alertmanager sent.

The store holds one probe a minute for three days, then 20 failed probes in a row. Counting by hand
(docs/slo-events.md §3, 99 % over 30 days): the 1h/5m page condition (14.4 × 1 % = 14.4 %) holds
from the 9th failure (9 of the 60 events in 1h, 15 %) while the 5m window holds a failure, i.e. until
four minutes after the last one; the 6h/30m page needs 22 failures among 360, the tickets more
than 1 % over 3 days and 3 % over a day: none holds. So one page incident, from T0 + 9 min to
T0 + 25 min (the first evaluation that is not burning), peak 1h burn 20/60 / 1 % = 33.3×.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.history.write import apply_bulk, finish
from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import generate
from monitor.report.data import Period
from monitor.report.incidents import episodes, holding
from monitor.slo.evaluate import WindowResult, evaluate_counts
from monitor.store import Store
from monitor.store.incidents import BurnIncident, derive_burn_incidents
from monitor.store.migrate import upgrade
from monitor.store.ops import alertmanager_op, endpoints_op, probe_op
from monitor.store.queries import StoredBurn
from tests.report import stores

CONFIG = stores.one_class()
T0 = datetime(2026, 11, 25, 10, 0, tzinfo=UTC).timestamp()
MIN = 60.0


def _probe(k: int) -> ProbeResult:
    """The probe completing at T0 + k minutes; those of minutes 1..20 timed out."""
    at = T0 + k * MIN
    failed = 1 <= k <= 20
    timings = Timings() if failed else Timings(ttft=0.1, e2e=1.0)
    return ProbeResult("ep", "chat", "chat", at - 1.0, "timeout" if failed else None, timings, finished_at=at)


def _store(tmp_path: Path) -> tuple[Model, Store]:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(CONFIG)
    model = load_model(cfg)
    url = f"sqlite:///{tmp_path / 'incidents.db'}"
    upgrade(url)
    store = Store(url)
    store.apply([endpoints_op(model.endpoints)])
    apply_bulk(store, [probe_op(model, _probe(k)) for k in range(-3 * 1440, 41)])
    finish(store)
    (slo,) = model.slos
    with store.counter() as counts:  # every minute from T0 - 5 min to T0 + 40 min, by the evaluator
        done = [evaluate_counts(slo, T0 + m * MIN, counts) for m in range(-5, 41)]
    store.save_evaluations(done)
    return model, store


def _report(model: Model, store: Store) -> generate.ReportData:
    week = Period("2026-W48", datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC))
    return generate.build(model, store, week, datetime(2026, 12, 1, tzinfo=UTC))


def test_burn_evaluations_become_one_derived_page_incident(tmp_path: Path) -> None:
    model, store = _store(tmp_path)
    try:
        data = _report(model, store)
        (incident,) = data.incidents
        assert (incident.source, incident.alertname, incident.severity) == (
            "derived",
            "SLOErrorBudgetBurnPage",
            "page",
        )
        assert incident.started_at.timestamp() == T0 + 9 * MIN and incident.ended_at is not None
        assert incident.ended_at.timestamp() == T0 + 25 * MIN and incident.duration_seconds == 16 * MIN
        assert incident.peak_burn == pytest.approx((20 / 60) / 0.01)
        # the cost runs from the longest page window (6h) before the start through the end: all 20
        # failures, the nine that made it fire included (it counted the 11 after its start)
        (cost,) = incident.costs
        assert (cost.slo_id, cost.bad) == ("chat/availability", 20)
        assert data.reader[0].incident == incident  # the incident that cost chat's worst SLO most

        store.apply([alertmanager_op(_alert(), T0 + 30 * MIN)])  # now Alertmanager sent it too
        (joined,) = _report(model, store).incidents  # the received alert is the record, with the peak
        assert (joined.source, joined.alertname, joined.peak_burn) == (
            "alertmanager",
            "SLOBurn",
            incident.peak_burn,
        )
        assert joined.started_at.timestamp() == T0 + 10 * MIN

        maintenance = _alert("M3MonMaintenanceInProgress", "f2", "info")  # listed apart, no incident
        store.apply([alertmanager_op(maintenance, T0 + 31 * MIN)])
        assert [i.alertname for i in _report(model, store).incidents] == ["SLOBurn"]
    finally:
        store.close()


def _alert(name: str = "SLOBurn", fingerprint: str = "f1", severity: str = "page") -> dict[str, object]:
    labels = {"alertname": name, "class": "chat", "slo": "availability", "severity": severity}
    alert = {"status": "resolved", "fingerprint": fingerprint, "labels": labels, "startsAt": "2026-11-25T10:10:00Z",
             "endsAt": "2026-11-25T10:30:00Z", "annotations": {"summary": "chat availability burning"}}  # fmt: skip
    return {"version": "4", "status": "resolved", "alerts": [alert]}


def _windows(bad_1h: float, bad_5m: float) -> tuple[WindowResult, ...]:
    def w(name: str, bad: float, total: float) -> WindowResult:
        ratio = bad / total
        return WindowResult(name, 0.0, 0.0, total - bad, total, 1 - ratio, 1 - ratio / 0.01, ratio / 0.01)

    return (w("5m", bad_5m, 5), w("1h", bad_1h, 60))


def test_a_burn_condition_counts_even_when_the_stored_status_says_exhausted(tmp_path: Path) -> None:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(CONFIG)
    model = load_model(cfg)
    # the evaluator stores "exhausted" first when the period's budget is gone; the pager still pages
    burns = [StoredBurn("chat/availability", "chat", "availability", T0, "exhausted", None, _windows(12, 2)),
             StoredBurn("chat/availability", "chat", "availability", T0 + MIN, "exhausted", None, _windows(12, 0))]  # fmt: skip
    hot, calm = holding(model, burns, {}, "page")
    assert [h[3] for h in hot] == [T0] and calm == {"chat/availability": [T0 + MIN]}
    assert holding(model, burns, {}, "ticket")[0] == []  # 1h and 5m windows alone hold no ticket condition


def test_runs_split_at_calm_evaluations_and_gaps() -> None:
    def b(at: float, severity: str = "page", burn: float = 2.0) -> tuple[str, str, str, float, str, float]:
        return ("c/s", "c", "s", at, severity, burn)

    burning = [b(0), b(60, burn=9.0), b(120), b(400), b(460), b(10_000)]
    calm = {"c/s": [180.0, 520.0]}
    found = derive_burn_incidents(burning, calm, until=10_060, gap=3600)
    assert [(i.starts_at, i.ends_at, i.peak_burn, i.evaluations) for i in found] == [
        (0, 180.0, 9.0, 3),  # ends at the first calm evaluation after it
        (400, 520.0, 2.0, 2),
        (10_000, None, 2.0, 1),  # more than an hour after the last one: a new incident, still burning
    ]
    # evaluations stopped (the monitor was down): it ends an hour after its last burning evaluation
    (late,) = derive_burn_incidents([b(0)], {}, until=9000, gap=3600)
    assert late.ends_at == 3600


def test_a_page_and_a_ticket_of_one_burn_are_one_episode() -> None:
    """Issue 24, finding 4: each brown-out was listed twice, as a page row and a ticket row."""

    def b(slo: str, severity: str, start: float, end: float | None, peak: float) -> BurnIncident:
        return BurnIncident(f"c/{slo}", "c", slo, severity, start, end, peak, 3)

    merged = episodes([
        b("a", "ticket", 100, 900, 2.0), b("a", "page", 300, 500, 20.0),  # nested: one episode
        b("a", "ticket", 900, None, 1.5),  # touching the first: the same episode, still open
        b("b", "page", 100, 200, 9.0), b("b", "ticket", 201, 300, 3.0),  # apart: two episodes
    ])  # fmt: skip
    assert [(i.slo_id, i.severity, i.starts_at, i.ends_at, i.peak_burn, i.evaluations) for i in merged] == [
        ("c/a", "page", 100, None, 20.0, 9),
        ("c/b", "page", 100, 200, 9.0, 3),
        ("c/b", "ticket", 201, 300, 3.0, 3),
    ]


def _sent(name: str, fingerprint: str, severity: str, starts: str, ends: str) -> dict[str, object]:
    """One resolved alert about chat/availability, as Alertmanager's webhook sends it."""
    labels = {"alertname": name, "class": "chat", "slo": "availability", "severity": severity}
    alert = {"status": "resolved", "fingerprint": fingerprint, "labels": labels, "annotations": {"summary": name},
             "startsAt": f"2026-11-25T{starts}:00Z", "endsAt": f"2026-11-25T{ends}:00Z"}  # fmt: skip
    return {"version": "4", "status": "resolved", "alerts": [alert]}


def test_a_received_page_and_ticket_of_one_burn_are_one_row(tmp_path: Path) -> None:
    """Issue 24: received alerts were never merged, so Alertmanager's page and ticket of one burn
    made two rows. The ticket fired 10:05-11:00 and the page 10:10-10:30 (inside it): one episode,
    a page, 10:05 to 11:00. Its cost, counted by hand: from the ticket's 3-day window before 10:05
    (the period's start bounds it: Monday 00:00) through 11:00, the store's bad events are the 20
    timeouts of 10:01-10:20. A later page 14:00-14:30 is another burn: its own row, costing the bad
    events from 11:00 (the first episode charged up to there) through 14:30: none."""
    model, store = _store(tmp_path)
    try:
        store.apply(
            [alertmanager_op(_sent("SLOErrorBudgetBurnTicket", "t1", "ticket", "10:05", "11:00"), T0)]
        )
        store.apply([alertmanager_op(_sent("SLOErrorBudgetBurnPage", "p1", "page", "10:10", "10:30"), T0)])
        (one,) = _report(model, store).incidents
        assert (one.source, one.alertname, one.severity) == ("alertmanager", "SLOErrorBudgetBurnPage", "page")
        assert one.started_at.timestamp() == T0 + 5 * MIN and one.ended_at is not None
        assert one.ended_at.timestamp() == T0 + 60 * MIN and one.duration_seconds == 55 * MIN
        assert one.peak_burn == pytest.approx((20 / 60) / 0.01)  # the derived page it covers
        assert [(c.slo_id, c.bad) for c in one.costs] == [("chat/availability", 20)]

        store.apply([alertmanager_op(_sent("SLOErrorBudgetBurnPage", "p2", "page", "14:00", "14:30"), T0)])
        first, second = _report(model, store).incidents
        assert (first.started_at.timestamp(), first.severity) == (T0 + 5 * MIN, "page")
        assert [c.bad for c in first.costs] == [20]
        assert (second.started_at.timestamp(), second.duration_seconds) == (T0 + 4 * 3600, 30 * MIN)
        assert [c.bad for c in second.costs] == [0]
    finally:
        store.close()
