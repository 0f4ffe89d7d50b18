"""A world through the real service: an HA pair of :class:`monitor.service.jobs.Jobs` on one SQLite store.

Each replica is the service's own ``Jobs`` (its exporter, its buffered writer with its own spool,
fleet mode with a slot per scrape and probe; replica A holds the evaluator lock). Only the HTTP
fetch is replaced: ``collect`` reads the world's page at the replica's scrape instant, so the
reading, the interval and the store op are the service's. In world-time order: every good scrape
of each replica (``Jobs.scrape``), every probe run at its completion by the replica that ran it
(``Jobs._record``, slot = its round) or, in a real-traffic world, every batch of spans at its
arrival at the replica that received it (``Jobs.spans``), and at 5 s past each minute the evaluation job of both
replicas (``Jobs.evaluate``). A replica whose writes are late (its spool replayed after an
outage) has that span's scrapes and results run at the span's end, in order. A replica that is
down neither scrapes, probes nor evaluates, and starts over (a new ``Jobs``) when it is up. After the last
minute the evaluator runs until nothing is left to evaluate again; then the stored evaluations
are read back.
"""

from __future__ import annotations

import asyncio
import heapq
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from monitor.exporter import Exporter
from monitor.fleet.role import FleetRole
from monitor.fleet.shard import Shard
from monitor.model import Endpoint, Model, load_model
from monitor.scrape import Reading, read_text, signals
from monitor.service import jobs as jobs_mod
from monitor.service.jobs import Jobs
from monitor.slo.evaluate import burn_alerts
from monitor.store import Store
from monitor.store.evaluations import EvaluationRepo
from tests.slo_agreement.unaligned.config import config
from tests.slo_agreement.unaligned.pages import T0, ServerPages, endpoint, probe_result, server_span
from tests.slo_agreement.unaligned.prometheus import Counts, checks
from tests.slo_agreement.unaligned.world import MINUTES, REPLICAS, World

PAGE, TICKET, EXHAUSTED = "SLOErrorBudgetBurnPage", "SLOErrorBudgetBurnTicket", "SLOErrorBudgetExhausted"


class _Lock:
    """The evaluator lock of a replica that holds it (A) or never gets it (B)."""

    def __init__(self, held: bool) -> None:
        self.holds = held

    def held(self) -> bool:
        return self.holds

    def give_up(self) -> None:
        self.holds = False

    def release(self) -> None:
        self.holds = False


@dataclass
class _Replica:
    name: str
    model: Model
    jobs: Jobs
    now: float = 0.0


Action = tuple[float, int, str, Callable[[], Awaitable[None] | None]]


class Run:
    """One world through two replicas' jobs."""

    def __init__(self, world: World, folder: Path, template: Path) -> None:
        self.world, self.folder = world, folder
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copytree(template, folder / "db")
        self.pages = ServerPages(world)
        self.replicas = {r: self._replica(r) for r in REPLICAS}

    def _replica(self, name: str) -> _Replica:
        path = self.folder / f"{name}.yaml"
        path.write_text(config([self.world], self.folder, spool=f"spool-{name}"))
        model = load_model(path)
        rep = _Replica(name, model, Jobs(model, Store(model.storage.url), Exporter(model),
                                         clock=lambda: T0 + rep.now, evaluation_step=60.0))  # fmt: skip
        rep.jobs.fleet = FleetRole(Shard(0, 1), name, _Lock(name == "a"))  # type: ignore[arg-type]

        async def no_fingerprint(*_: Any) -> None:
            return None

        rep.jobs._fingerprint = no_fingerprint  # type: ignore[method-assign]
        return rep

    def _actions(self) -> list[Action]:
        out: list[Action] = []
        n = 0
        for (replica, pool), sched in self.world.monitors.items():
            ep = next(
                e for e in self.replicas[replica].model.endpoints if e.name == endpoint(self.world, pool)
            )
            for t in sched.good():
                out.append(self._late(replica, t, n, "scrape", self._scrape(replica, ep, t)))
                n += 1
        if self.world.source == "traffic":
            for (replica, at), batch in self._batches().items():
                out.append(self._late(replica, at, n, "spans", self._spans(replica, at, batch)))
                n += 1
        else:
            for run in self.world.runs:
                out.append(self._late(run.replica, run.end, n, "probe", self._probe(run)))
                n += 1
        for m in range(MINUTES + 1):
            out.append((m * 60 + 5.0, n, "evaluate", self._evaluate(m * 60 + 5.0)))
            n += 1
        for replica, spans in self.world.monitor_down.items():
            for _, up in spans:
                out.append((up, n, "restart", self._restart(replica, up)))
                n += 1
        heapq.heapify(out)
        return out

    def _late(self, replica: str, t: float, n: int, kind: str, fn: Callable[[], Any]) -> Action:
        late = self.world.late
        if late is not None and late[0] == replica and late[1] < t <= late[2]:
            return (late[2] + 1e-3 * (t - late[1]) / (late[2] - late[1] + 1), n, kind, fn)
        return (t, n, kind, fn)

    def _restart(self, replica: str, at: float) -> Callable[[], Awaitable[None]]:
        """The replica's process starts over: a new ``Jobs`` (nothing kept in memory; its spool stays)."""

        async def go() -> None:
            await self.replicas[replica].jobs.close()
            self.replicas[replica] = self._replica(replica)
            self.replicas[replica].now = at

        return go

    def _scrape(self, replica: str, ep: Endpoint, t: float) -> Callable[[], Awaitable[None]]:
        pool = ep.name.rsplit("-", 1)[1]

        async def collect(endpoint_: Endpoint, _client: Any, previous: Reading | None, **_: Any) -> Any:
            reading = read_text(self.pages.text(pool, t), at=T0 + t)
            return reading, signals(endpoint_.name, reading, previous, model=endpoint_.model)

        async def go() -> None:
            rep = self.replicas[replica]
            rep.now = max(rep.now, t)
            with mock.patch.object(jobs_mod, "collect", collect):
                await rep.jobs.scrape(ep)

        return go

    def _probe(self, run: Any) -> Callable[[], Awaitable[None]]:
        async def go() -> None:
            rep = self.replicas[run.replica]
            rep.now = max(rep.now, run.end)
            await rep.jobs._record(probe_result(self.world, run), int(run.start // self.world.probe_interval))

        return go

    def _batches(self) -> dict[tuple[str, float], list[int]]:
        """The spans each replica receives in one OTLP request (one batch: same receiver and arrival)."""
        out: dict[tuple[str, float], list[int]] = {}
        for i, run in enumerate(self.world.runs):
            out.setdefault((run.replica, run.end), []).append(i)
        return out

    def _spans(self, replica: str, at: float, batch: list[int]) -> Callable[[], Awaitable[None]]:
        """One OTLP request reaching the replica's receiver at ``at`` (``Jobs.spans``: counted and
        sliced at its arrival; a late replica's writes reach the store later, stamped as received)."""
        spans = [server_span(self.world, i) for i in batch]

        async def go() -> None:
            rep = self.replicas[replica]
            later, rep.now = max(rep.now, at), at
            await rep.jobs.spans(spans)
            rep.now = later

        return go

    def _evaluate(self, at: float) -> Callable[[], None]:
        def go() -> None:
            for name in ("b", "a"):  # the standby reports its progress, then the evaluator evaluates
                if self.world.down(name, at):
                    continue  # a replica that is down evaluates nothing
                rep = self.replicas[name]
                rep.now = max(rep.now, at)
                rep.jobs.evaluate()

        return go

    async def _drive(self) -> None:
        actions = self._actions()
        while actions:
            _, _, _, fn = heapq.heappop(actions)
            result = fn()
            if result is not None:
                await result
        end = MINUTES * 60 + 5.0
        for _ in range(20):  # the steps late writes changed: evaluated again until none is left
            self._evaluate(end)()
            dirty = getattr(self.replicas["a"].jobs.store, "any_dirty", None)
            if dirty is None or not dirty():  # (a store without dirty marks never evaluates again)
                break
        for rep in self.replicas.values():
            await rep.jobs.close()

    def run(self) -> Counts:
        asyncio.run(self._drive())
        model = self.replicas["a"].model
        slo = model.slos[0]
        store = Store(model.storage.url)
        try:
            with store.session() as s:
                found = EvaluationRepo(s).between(T0, T0 + MINUTES * 60 + 1, slo.id)
            return _outcome(slo, found)
        finally:
            store.close()
            for rep in self.replicas.values():
                rep.jobs.store.close()


def _outcome(slo: Any, evaluations: list[Any]) -> Counts:
    out = Counts()
    wanted = set(checks())
    for ev in evaluations:
        m = round((ev.evaluated_at - T0) / 60)
        by_name = {w.window: w for w in ev.windows}
        if m in wanted:
            out.counts[m] = {w: (r.total, r.total - r.good) for w, r in by_name.items()}
        firing = {PAGE if a.severity == "page" else TICKET for a in burn_alerts(slo, ev.windows)}
        period = by_name.get(slo.period_window)
        if period is not None and period.budget_remaining is not None and period.budget_remaining <= 0:
            firing.add(EXHAUSTED)
        out.firing[m] = frozenset(firing)
    return out


def stored_total(folder: Path) -> float:
    """Every counted event the store holds (slices outside maintenance), straight from its table."""
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{folder / 'db' / 'm3mon.db'}")
    try:
        with engine.connect() as conn:
            value = conn.execute(
                text("SELECT coalesce(sum(total), 0) FROM event_slices WHERE maintenance IS NULL")
            )
            return float(value.scalar() or 0.0)
    finally:
        engine.dispose()
