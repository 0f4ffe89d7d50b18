"""The store: one database (SQLite file or PostgreSQL) behind typed repositories.

:class:`Store` owns the engine and hands out transactions; it also implements what the SLO
evaluator needs (:class:`monitor.slo.due.EvaluationStore`). Writes that must survive an outage
go through :class:`monitor.store.buffer.BufferedWriter`, which uses :meth:`Store.apply`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
from sqlalchemy import inspect
from sqlalchemy.orm import Session, sessionmaker

from monitor.errors import StoreError
from monitor.model import Model
from monitor.slo.columns import ColumnCounter, Floats
from monitor.slo.due import Dirty
from monitor.slo.evaluate import Counter, SLOEvaluation
from monitor.store import progress
from monitor.store.counts import EventCounts
from monitor.store.engine import display_url, make_engine, sqlite_file
from monitor.store.evaluations import EvaluationRepo
from monitor.store.ops import Applied, Op, apply_op
from monitor.store.readings import lock_endpoints
from monitor.store.retention import Pruned, prune
from monitor.store.running import RunningCounts


class StepCounts:
    """The running sums' counts at a step, one window or column-wise; what they do not hold is
    read by ``fallback`` (:class:`monitor.slo.columns.ColumnCounter`)."""

    def __init__(self, running: RunningCounts, fallback: EventCounts) -> None:
        self.running, self.fallback = running, fallback

    def __call__(self, slo_id: str, start: float, end: float) -> tuple[float, float]:
        held = self.running.counts(slo_id, start, end)
        return held if held is not None else self.fallback.counts(slo_id, start, end)

    def columns(self, slo_ids: Sequence[str], starts: Sequence[float], end: float) -> tuple[Floats, Floats]:
        good, total, held = self.running.columns(slo_ids, starts, end)
        for i, k in zip(*np.nonzero(~held), strict=True):
            good[i, k], total[i, k] = self.fallback.counts(slo_ids[i], starts[k], end)
        return good, total


def _is_reading(op: object) -> bool:
    return isinstance(op, dict) and op.get("op") == "reading" and isinstance(op.get("endpoint"), str)


class Store:
    """A database URL made usable: transactions, evaluator hooks, ops, retention."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        #: the incremental evaluator's window sums (monitor.store.running), kept across steps
        self.running = RunningCounts()

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: committed when the block ends, rolled back on error."""
        with self._sessions.begin() as session:
            yield session

    def check_schema(self) -> None:
        """Raise StoreError unless the migrations have been applied. A SQLite file that does not
        exist is not created (connecting would create an empty one)."""
        path = sqlite_file(self.url)
        if path is not None and not os.path.exists(path):
            raise StoreError(f"no store at {path} (run `m3mon db upgrade -c CONFIG` to create it)")
        if not inspect(self.engine).has_table("evaluations"):
            shown = display_url(self.url)
            raise StoreError(
                f"database not migrated: {shown} (no m3mon tables; run `m3mon db upgrade -c CONFIG`)"
            )

    def apply(self, ops: Sequence[Op], model: Model | None = None) -> list[Applied]:
        """Write ops in order, in one transaction (all or nothing); ``model`` derives the intervals
        of ``reading`` ops. The endpoints whose readings the batch holds are locked first, in name
        order, so two writers' batches never deadlock."""
        with self.session() as s:
            lock_endpoints(s, [str(op["endpoint"]) for op in ops if _is_reading(op)])
            return [apply_op(s, op, model) for op in ops]

    # --- evaluator hooks (monitor.slo.due.EvaluationStore) -------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """One read transaction whose statements all see the same committed state.

        PostgreSQL's default (READ COMMITTED) gives each statement its own snapshot: a write
        committed between an evaluation's rollup read and its raw-slice read (an interval split by
        a late reading) would be half seen, its events counted in neither or both parts. REPEATABLE
        READ takes one snapshot at the first read; the dirty marks still catch what commits after
        it (:mod:`monitor.store.progress`: the announcement is committed before this begins).
        SQLite's driver runs a SELECT outside any transaction (each sees the latest commit): an
        explicit BEGIN makes the reads one WAL read transaction."""
        with self.session() as s:
            if self.engine.dialect.name == "postgresql":
                s.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            elif self.engine.dialect.name == "sqlite":
                s.connection().exec_driver_sql("BEGIN")
            yield s

    @contextmanager
    def counter(self) -> Iterator[Counter]:
        """Window counts over one read snapshot (see :class:`monitor.store.counts.EventCounts`)."""
        with self.snapshot() as s:
            yield EventCounts(s).counts

    @contextmanager
    def step_counter(
        self, at: float, slo_ids: Sequence[str], lengths: Iterable[float]
    ) -> Iterator[ColumnCounter]:
        """Window counts at step ``at`` of ``slo_ids`` from the running sums, advanced to ``at``
        first; anything they do not hold is read as :meth:`counter` reads it (one snapshot)."""
        with self.snapshot() as s:
            self.running.advance(s, at, slo_ids, lengths)
            yield StepCounts(self.running, EventCounts(s))

    def forget_running(self, slo_ids: Sequence[str] | None = None) -> None:
        self.running.forget(slo_ids)

    def counts(self, slo_id: str, start: float, end: float) -> tuple[float, float]:
        """Counts of one window in its own session (convenient; use :meth:`counter` in loops)."""
        with self.counter() as counts:
            return counts(slo_id, start, end)

    def last_evaluated_at(self, slo_id: str) -> float | None:
        with self.session() as s:
            return EvaluationRepo(s).last_evaluated_at(slo_id)

    def last_evaluated(self, slo_ids: Sequence[str]) -> dict[str, float]:
        """Newest stored instants; those evaluated at or after the running sums' step are read in
        one range scan, the others by index lookups, 500 a statement (all of them on the first call)."""
        with self.session() as s:
            return EvaluationRepo(s).last_evaluated(slo_ids, self.running.at)

    def save_evaluations(self, evaluations: Sequence[SLOEvaluation], replace: bool = False) -> int:
        with self.session() as s:
            EvaluationRepo(s).save(evaluations, replace)
        return len(evaluations)

    def announce(self, until: Mapping[str, float]) -> None:
        if until:
            with self.session() as s:
                progress.announce(s, until)

    def dirty(self, slo_ids: Sequence[str]) -> list[Dirty]:
        with self.session() as s:
            return progress.dirty(s, slo_ids)

    def advance_dirty(self, mark: Dirty, since: float | None) -> None:
        with self.session() as s:
            progress.advance(s, mark, since)

    def any_dirty(self) -> bool:
        with self.session() as s:
            return progress.any_dirty(s)

    # --- fleet mode: how far every replica's writes are in (monitor.store.progress) ------

    def report_progress(self, replica: str, complete_until: float, now: float) -> None:
        with self.session() as s:
            progress.report(s, replica, complete_until, now)

    def fleet_complete_until(self, now: float, own: float, step: float) -> float:
        with self.session() as s:
            return progress.fleet_complete_until(s, now, own, step)

    def latest_evaluations(self, at: float | None = None) -> list[SLOEvaluation]:
        with self.session() as s:
            return EvaluationRepo(s).latest(at)

    def prune(self, now: float, retention: float) -> Pruned:
        with self.session() as s:
            return prune(s, now, retention)
