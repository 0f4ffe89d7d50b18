"""Evaluating a scenario the way ``m3mon run`` does: ops through the buffered writer into SQLite.

Minute by minute: probe results are written when they complete (``probe_op``), each pool's page
is read by the real collector (``read_text``) and its reading written (``reading_op``: the store
derives the interval since the previous stored reading), then the evaluation job runs (flush the spool; while a backlog remains
the database is away and nothing is evaluated; else ``evaluate_due``, which backfills missed
steps). The service evaluates a step ``SETTLE`` (5 s) after it so that results completed just
before it are written; here every write of a minute precedes that minute's evaluation, which is
the same. A database outage renames the database's folder away, as tests/store does. At the end
the stored evaluations are read back.

Evaluating costs ~40 ms a step, so a scenario may name the minutes worth evaluating (``at``:
check minutes and the minutes around every change of the oracle's alerts); each is evaluated
in real time, at its minute, by ``evaluate_due`` limited to that one step. Without ``at`` (the
database-outage scenario) every minute is due and missed steps are backfilled.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from monitor.model import Model, load_model
from monitor.scrape import read_text
from monitor.slo.due import MAX_BACKFILL, STEP, evaluate_due
from monitor.slo.evaluate import SLOEvaluation, WindowResult, burn_alerts
from monitor.store import BufferedWriter, Store
from monitor.store.evaluations import EvaluationRepo
from monitor.store.ops import probe_op
from monitor.store.readings import reading_op
from tests.slo_agreement.config import config
from tests.slo_agreement.exposition import Pages
from tests.slo_agreement.oracle import WINDOWS, period_name
from tests.slo_agreement.probe_results import Results
from tests.slo_agreement.results import BURN_PAGE, BURN_TICKET, EXHAUSTED, STORE_ALERTS, Outcome, Reading
from tests.slo_agreement.results import WindowReading as WR
from tests.slo_agreement.streams import Scenario


@dataclass(frozen=True)
class Inputs:
    """What the monitor sees of a scenario: probe results and server pages (scenario time ``t0``)."""

    t0: float
    results: Results
    pages: Pages


def scenario_model(scn: Scenario, workdir: Path, template: Path) -> Model:
    """The scenario's configuration file and a migrated database (a copy of ``template``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "monitor.yaml"
    path.write_text(config([scn], storage=workdir))
    shutil.copytree(template, workdir / "db")
    return load_model(path)


@contextmanager
def _away(db_dir: Path) -> Iterator[None]:
    away = db_dir.with_name("db-away")
    db_dir.rename(away)
    try:
        yield
    finally:
        away.rename(db_dir)


class Run:
    """One scenario going through the store, minute by minute."""

    def __init__(
        self, scn: Scenario, model: Model, workdir: Path, inputs: Inputs, at: set[int] | None = None
    ) -> None:
        self.scn, self.model, self.t0, self.at = scn, model, inputs.t0, at
        self.store = Store(model.storage.url)
        self.writer = BufferedWriter(self.store, model.storage.buffer_dir, model.storage.buffer_max_items,
                                     model=lambda: model)  # fmt: skip
        self.results = list(inputs.results)
        self.pages = inputs.pages
        self.db_dir = workdir / "db"

    def minute(self, m: int) -> None:
        while self.results and self.results[0][0] <= m * 60:
            self.writer.submit(probe_op(self.model, self.results.pop(0)[1]))
        for pool, texts in self.pages.items():
            text = texts[m]
            if text is None:
                continue  # the scrape failed: the store derives the next interval from the last reading
            reading = read_text(text, at=self.t0 + m * 60)
            self.writer.submit(reading_op(self.scn.endpoint(pool), reading))
        self.evaluate(m)

    def evaluate(self, m: int) -> None:
        """The service's evaluation job at minute ``m`` (only at the minutes in ``at`` when given)."""
        self.writer.flush()
        if self.writer.backlog:
            return  # the database is away: evaluating now would miss buffered events
        if self.at is not None and m not in self.at:
            return
        backfill = MAX_BACKFILL if self.at is None else STEP  # sparse: this step only
        try:
            evaluate_due(self.store, self.model, self.t0 + m * 60, max_backfill=backfill)
        except SQLAlchemyError:
            return  # as the service's job: logged, tried again at the next step

    def run(self) -> list[SLOEvaluation]:
        down, up = self.scn.db_outage or (self.scn.minutes + 1, self.scn.minutes + 1)
        for m in range(down):
            self.minute(m)
        if down <= self.scn.minutes:
            with _away(self.db_dir):
                for m in range(down, up):
                    self.minute(m)
            for m in range(up, self.scn.minutes + 1):
                self.minute(m)
        with self.store.session() as s:
            slo_id = self.model.slos[0].id
            found = EvaluationRepo(s).between(self.t0, self.t0 + self.scn.minutes * 60 + 1, slo_id)
        self.store.close()
        return found


def _window(w: WindowResult) -> WR:
    ratio = (w.total - w.good) / w.total if w.total > 0 else None
    return WR(ratio, w.attainment, w.burn_rate)


def outcome(scn: Scenario, model: Model, evaluations: list[SLOEvaluation], t0: float) -> Outcome:
    slo = model.slos[0]
    names = [w for w, _ in WINDOWS] + [period_name(scn)]
    out = Outcome("store", alerts=STORE_ALERTS)
    for ev in evaluations:
        m = round((ev.evaluated_at - t0) / 60)
        by_name = {w.window: w for w in ev.windows}
        period = by_name.get(period_name(scn))
        remaining = period.budget_remaining if period is not None else None
        if m in scn.checks:
            out.readings[m] = Reading({n: _window(by_name[n]) for n in names if n in by_name}, remaining)
        severities = {a.severity for a in burn_alerts(slo, ev.windows)}
        firing = {BURN_PAGE} if "page" in severities else set()
        firing |= {BURN_TICKET} if "ticket" in severities else set()
        firing |= {EXHAUSTED} if remaining is not None and remaining <= 0 else set()
        out.firing[m] = frozenset(firing)
        out.status[m] = ev.status + (f"/{ev.severity}" if ev.severity else "")
    return out
