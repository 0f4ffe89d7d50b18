"""Stored SLO evaluations: one row per (SLO, evaluated_at) holding every window, read back as evaluations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.slo.columns import WINDOW_KEYS
from monitor.slo.evaluate import SLOEvaluation, WindowResult
from monitor.store.ops import apply_op, evaluations_op
from monitor.store.tables import EvaluationRow

#: Rows are read as plain tuples (not ORM objects): a week of evaluations is ~10k rows per SLO.
TABLE = EvaluationRow.__table__


def window_results(
    windows: dict[str, list[Any]] | list[dict[str, Any]], at: float
) -> tuple[WindowResult, ...]:
    """A stored row's ``windows`` (ending at ``at``) as results, in stored order (shortest first):
    one object of columns (a list of objects, one per window, from a replica not yet upgraded)."""
    if isinstance(windows, dict):
        end = float(at)
        return tuple(
            WindowResult(n, s, end, g, t, a, b, r)
            for n, s, g, t, a, b, r in zip(*(windows[k] for k in WINDOW_KEYS), strict=True)
        )
    return tuple(
        WindowResult(w["window"], w["start"], float(at), w["good"], w["total"], w["attainment"],
                     w["budget_remaining"], w["burn_rate"])
        for w in windows
    )  # fmt: skip


def evaluation_of(r: Any) -> SLOEvaluation:
    """An evaluation from its stored row."""
    at = float(r.evaluated_at)
    windows = window_results(r.windows, at)
    head = (r.slo_id, r.request_class, r.slo_name, r.sli, r.objective, at)
    return SLOEvaluation(*head, windows, r.status, r.severity)


def _assemble(rows: Iterable[Any]) -> list[SLOEvaluation]:
    """Evaluations from stored rows, oldest first (then by SLO)."""
    out = [evaluation_of(r) for r in rows]
    out.sort(key=lambda e: (e.evaluated_at, e.slo_id))
    return out


class EvaluationRepo:
    """Writes evaluations idempotently and reads them back."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def save(self, evaluations: Sequence[SLOEvaluation], replace: bool = False) -> None:
        """Store evaluations; rows already stored for the same key are left as they are, or (with
        ``replace``: a step evaluated again after a late write) overwritten."""
        apply_op(self.session, evaluations_op(evaluations, replace))

    def last_evaluated_at(self, slo_id: str) -> float | None:
        q = select(func.max(EvaluationRow.evaluated_at)).where(EvaluationRow.slo_id == slo_id)
        value = self.session.scalar(q)
        return float(value) if value is not None else None

    def last_evaluated(self, slo_ids: Sequence[str], since: float | None) -> dict[str, float]:
        """The newest evaluated instant of each of ``slo_ids`` that has one. ``since``: an instant
        most were evaluated at or after (one range read for those; the rest by index lookups:
        PostgreSQL all in one statement, SQLite one by one)."""
        found: dict[str, float] = {}
        if since is not None:
            e = EvaluationRow
            q = select(e.slo_id, func.max(e.evaluated_at)).where(e.evaluated_at >= since).group_by(e.slo_id)
            wanted = set(slo_ids)
            found = {k: float(v) for k, v in self.session.execute(q) if k in wanted}
        rest = [s for s in slo_ids if s not in found]
        if self.session.get_bind().dialect.name != "postgresql":  # in-process: one by one is cheap
            lasts = {s: self.last_evaluated_at(s) for s in rest}
            return found | {k: v for k, v in lasts.items() if v is not None}
        return found | self._newest(rest)

    def _newest(self, slo_ids: Sequence[str]) -> dict[str, float]:
        """The newest instant of each of ``slo_ids`` that has one: one statement, one index
        lookup per SLO (a correlated ``max`` over the primary key, not a scan of their rows), the
        ids sent as one JSON document (PostgreSQL)."""
        if not slo_ids:
            return {}
        sql = (
            "SELECT t.slo_id, (SELECT max(e.evaluated_at) FROM evaluations e WHERE e.slo_id = t.slo_id) "
            "FROM json_array_elements_text(%s::json) AS t(slo_id)"
        )
        rows = self.session.connection().exec_driver_sql(sql, (orjson.dumps(list(slo_ids)).decode(),))
        return {str(k): float(cast(float, v)) for k, v in rows if v is not None}

    def latest(self, at: float | None = None) -> list[SLOEvaluation]:
        """The newest evaluation of every SLO (at or before ``at`` when given)."""
        e = EvaluationRow
        newest = select(e.slo_id, func.max(e.evaluated_at).label("at")).group_by(e.slo_id)
        if at is not None:
            newest = newest.where(e.evaluated_at <= at)
        sub = newest.subquery()
        q = select(TABLE).join(sub, (e.slo_id == sub.c.slo_id) & (e.evaluated_at == sub.c.at))
        return _assemble(self.session.execute(q))

    def between(self, start: float, end: float, slo_id: str | None = None) -> list[SLOEvaluation]:
        """Evaluations with ``start <= evaluated_at < end``, oldest first."""
        q = select(TABLE).where(EvaluationRow.evaluated_at >= start, EvaluationRow.evaluated_at < end)
        if slo_id is not None:
            q = q.where(EvaluationRow.slo_id == slo_id)
        return _assemble(self.session.execute(q))

    def count(self) -> int:
        return int(self.session.scalar(select(func.count()).select_from(EvaluationRow)) or 0)
