"""A budget exhausted for a stretch is an incident, with or without a burn alert, in the derived and
the Alertmanager-fed mode; a class whose budget was exhausted for days never reads "no incident".

The store: one probe every 20 minutes from 2026-11-16, and 10 timeouts in a row from 2026-11-24
10:00. The 99 % / 30d availability budget allows 1 % of the period's events: 10 bad among about
600 events is 1.7 %, so the budget stays spent for days after the burn alerts stopped, until
enough good probes dilute it. Evaluations every hour, by the evaluator. The oracle reads the
stored evaluations' statuses directly (SQL): the exhaustion stretch is from the first ``exhausted``
one to the first later one that is not."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.history.write import apply_bulk, finish
from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import display, generate
from monitor.report.data import Period, ReportData
from monitor.slo.evaluate import evaluate_counts
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import alertmanager_op, endpoints_op, probe_op
from tests.report import stores

CONFIG = stores.one_class()
STEP = 1200.0
START = datetime(2026, 11, 16, tzinfo=UTC).timestamp()
FAIL = datetime(2026, 11, 24, 10, 0, tzinfo=UTC).timestamp()
WEEK = Period("2026-W48", datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC))


def _probe(at: float) -> ProbeResult:
    failed = FAIL <= at < FAIL + 10 * STEP
    timings = Timings() if failed else Timings(ttft=0.1, e2e=1.0)
    return ProbeResult("ep", "chat", "chat", at - 1.0, "timeout" if failed else None, timings, finished_at=at)


@pytest.fixture(scope="module")
def store_at(tmp_path_factory: pytest.TempPathFactory) -> tuple[Model, Path]:
    tmp = tmp_path_factory.mktemp("exhaustion")
    cfg = tmp / "monitor.yaml"
    cfg.write_text(CONFIG)
    model = load_model(cfg)
    db = tmp / "exhaustion.db"
    upgrade(f"sqlite:///{db}")
    store = Store(f"sqlite:///{db}")
    try:
        store.apply([endpoints_op(model.endpoints)])
        end = WEEK.end.timestamp()
        apply_bulk(
            store, [probe_op(model, _probe(START + k * STEP)) for k in range(int((end - START) / STEP) + 1)]
        )
        finish(store)
        (slo,) = model.slos
        with store.counter() as counts:
            done = [
                evaluate_counts(slo, WEEK.start.timestamp() + k * 3600, counts) for k in range(1, 7 * 24 + 1)
            ]
        store.save_evaluations(done)
    finally:
        store.close()
    return model, db


def _stretches(db: Path) -> list[tuple[float, float | None]]:
    """Runs of stored ``exhausted`` evaluations, read from the table (the oracle)."""
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT evaluated_at, status FROM evaluations ORDER BY evaluated_at").fetchall()
    out: list[tuple[float, float | None]] = []
    begun: float | None = None
    for at, status in rows:
        if status == "exhausted" and begun is None:
            begun = at
        elif status != "exhausted" and begun is not None:
            out.append((begun, at))
            begun = None
    if begun is not None:
        out.append((begun, None))
    return out


def _copy(db: Path, tmp_path: Path) -> str:
    target = tmp_path / "copy.db"
    target.write_bytes(db.read_bytes())
    return f"sqlite:///{target}"


def _build(model: Model, url: str) -> ReportData:
    store = Store(url)
    try:
        return generate.build(model, store, WEEK, datetime(2026, 12, 1, tzinfo=UTC))
    finally:
        store.close()


def _check(data: ReportData, db: Path) -> None:
    ((start, end),) = _stretches(db)
    assert end is not None and end - start > 2 * 86400  # the store holds days of exhaustion
    exhausted = [i for i in data.incidents if i.alertname == "SLOErrorBudgetExhausted"]
    assert len(exhausted) == 1
    (i,) = exhausted
    assert i.started_at.timestamp() == start and i.ended_at is not None and i.ended_at.timestamp() == end
    (r,) = data.reader
    text = display.reader_line(r)
    assert "no incident" not in text
    assert f"exhausted for {display.duration(end - start)}" in text
    assert [(e.slo, e.seconds) for e in r.exhausted] == [("availability", end - start)]


def test_derived_mode_lists_the_exhaustion(store_at: tuple[Model, Path], tmp_path: Path) -> None:
    model, db = store_at
    data = _build(model, _copy(db, tmp_path))
    _check(data, db)
    burns = [i for i in data.incidents if i.alertname != "SLOErrorBudgetExhausted"]
    assert burns and all(i.ended_at is not None and i.ended_at.timestamp() < FAIL + 86400 for i in burns)
    # costs never count an event twice: the incidents' bad events add up to at most the 10 timeouts
    assert sum(c.bad for i in data.incidents for c in i.costs) == 10


def _sent(name: str, fp: str, severity: str, starts: str, ends: str) -> dict[str, object]:
    labels = {"alertname": name, "class": "chat", "slo": "availability", "severity": severity}
    alert = {"status": "resolved", "fingerprint": fp, "labels": labels, "annotations": {"summary": name},
             "startsAt": starts, "endsAt": ends}  # fmt: skip
    return {"version": "4", "status": "resolved", "alerts": [alert]}


def test_alertmanager_fed_mode_lists_the_exhaustion(store_at: tuple[Model, Path], tmp_path: Path) -> None:
    """Alertmanager sent the page only: the exhaustion is still listed (from the evaluations). Once
    it sent the exhaustion alert too, that alert is its own row (never folded into the page's
    episode), the record of the stretch, and not listed twice."""
    model, db = store_at
    url = _copy(db, tmp_path)
    store = Store(url)
    try:
        page = _sent("SLOErrorBudgetBurnPage", "p1", "page", "2026-11-24T10:40:00Z", "2026-11-24T14:00:00Z")
        store.apply([alertmanager_op(page, FAIL)])
    finally:
        store.close()
    _check(_build(model, url), db)
    ((start, end),) = _stretches(db)
    store = Store(url)
    try:
        iso = datetime.fromtimestamp(start, UTC).isoformat().replace("+00:00", "Z")
        til = datetime.fromtimestamp(end, UTC).isoformat().replace("+00:00", "Z")
        store.apply([alertmanager_op(_sent("SLOErrorBudgetExhausted", "x1", "ticket", iso, til), FAIL)])
    finally:
        store.close()
    data = _build(model, url)
    rows = [(i.alertname, i.source) for i in data.incidents]
    assert ("SLOErrorBudgetExhausted", "alertmanager") in rows
    assert ("SLOErrorBudgetBurnPage", "alertmanager") in rows
    assert rows.count(("SLOErrorBudgetExhausted", "alertmanager")) == 1
    assert ("SLOErrorBudgetExhausted", "derived") not in rows
    _check(data, db)
