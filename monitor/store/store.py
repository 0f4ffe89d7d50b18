"""The store: one database (SQLite file or PostgreSQL) behind typed repositories.

:class:`Store` owns the engine and hands out transactions; it also implements what the SLO
evaluator needs (:class:`monitor.slo.due.EvaluationStore`). Writes that must survive an outage
go through :class:`monitor.store.buffer.BufferedWriter`, which uses :meth:`Store.apply`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import inspect
from sqlalchemy.orm import Session, sessionmaker

from monitor.errors import StoreError
from monitor.slo.evaluate import Counter, SLOEvaluation
from monitor.store.counts import EventCounts
from monitor.store.engine import display_url, make_engine
from monitor.store.evaluations import EvaluationRepo
from monitor.store.ops import Op, apply_op
from monitor.store.retention import Pruned, prune


class Store:
    """A database URL made usable: transactions, evaluator hooks, ops, retention."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: committed when the block ends, rolled back on error."""
        with self._sessions.begin() as session:
            yield session

    def check_schema(self) -> None:
        """Raise StoreError unless the migrations have been applied."""
        if not inspect(self.engine).has_table("evaluations"):
            shown = display_url(self.url)
            raise StoreError(
                f"database not migrated: {shown} (no m3mon tables; run `m3mon db upgrade -c CONFIG`)"
            )

    def apply(self, ops: Sequence[Op]) -> None:
        """Write ops in order, in one transaction (all or nothing)."""
        with self.session() as s:
            for op in ops:
                apply_op(s, op)

    # --- evaluator hooks (monitor.slo.due.EvaluationStore) -------------------------------

    @contextmanager
    def counter(self) -> Iterator[Counter]:
        """Window counts over one read session (see :class:`monitor.store.counts.EventCounts`)."""
        with self.session() as s:
            yield EventCounts(s).counts

    def counts(self, slo_id: str, start: float, end: float) -> tuple[float, float]:
        """Counts of one window in its own session (convenient; use :meth:`counter` in loops)."""
        with self.counter() as counts:
            return counts(slo_id, start, end)

    def last_evaluated_at(self, slo_id: str) -> float | None:
        with self.session() as s:
            return EvaluationRepo(s).last_evaluated_at(slo_id)

    def save_evaluations(self, evaluations: Sequence[SLOEvaluation]) -> int:
        with self.session() as s:
            EvaluationRepo(s).save(evaluations)
        return len(evaluations)

    def latest_evaluations(self, at: float | None = None) -> list[SLOEvaluation]:
        with self.session() as s:
            return EvaluationRepo(s).latest(at)

    def prune(self, now: float, retention: float) -> Pruned:
        with self.session() as s:
            return prune(s, now, retention)
