"""Stored replay runs (``replay_runs``): written by ``m3mon replay``, read by contract and compare."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.tables import ReplayRunRow
from monitor.store.upsert import finite


@dataclass(frozen=True)
class StoredRun:
    """One replay run as stored."""

    id: int
    endpoint: str
    request_class: str
    started_at: float
    duration: float
    load_kind: str
    load_value: float | None
    profile_digest: str
    fingerprint_digest: str | None
    fingerprint: dict[str, Any]
    meets_slos: bool | None
    summary: dict[str, Any]

    @property
    def not_evidence(self) -> str | None:
        """Why this run is no evidence of the deployment's capacity (None: it is evidence).
        Set when it was stored (:func:`monitor.contract.runs.evidence_problem`)."""
        reason = self.summary.get("not_evidence")
        return str(reason) if reason else None

    @property
    def load_label(self) -> str:
        if self.load_kind == "burst":
            return "burst (every request at once)"
        value = "profile rate" if self.load_value is None else f"{self.load_value:g}"
        return f"{self.load_kind} {value}"


def _clean(value: Any) -> Any:
    """JSON-safe: non-finite floats become None (PostgreSQL JSON refuses NaN)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return finite(value) if isinstance(value, float) else value


def save_run(session: Session, run: StoredRun) -> int:
    """Insert ``run`` (its ``id`` is ignored); returns the new id."""
    row = ReplayRunRow(
        endpoint=run.endpoint,
        request_class=run.request_class,
        started_at=run.started_at,
        duration=run.duration,
        load_kind=run.load_kind,
        load_value=run.load_value,
        profile_digest=run.profile_digest,
        fingerprint_digest=run.fingerprint_digest,
        fingerprint=_clean(run.fingerprint),
        meets_slos=run.meets_slos,
        summary=_clean(run.summary),
    )
    session.add(row)
    session.flush()
    return row.id


def _of(row: ReplayRunRow) -> StoredRun:
    return StoredRun(
        row.id,
        row.endpoint,
        row.request_class,
        row.started_at,
        row.duration,
        row.load_kind,
        row.load_value,
        row.profile_digest,
        row.fingerprint_digest,
        dict(row.fingerprint),
        row.meets_slos,
        dict(row.summary),
    )


def runs(session: Session, request_class: str | None = None, endpoint: str | None = None) -> list[StoredRun]:
    """Stored runs, oldest first, optionally of one class and/or endpoint."""
    q = select(ReplayRunRow)
    if request_class is not None:
        q = q.where(ReplayRunRow.request_class == request_class)
    if endpoint is not None:
        q = q.where(ReplayRunRow.endpoint == endpoint)
    return [_of(r) for r in session.scalars(q.order_by(ReplayRunRow.started_at, ReplayRunRow.id))]


def run_by_id(session: Session, run_id: int) -> StoredRun | None:
    row = session.get(ReplayRunRow, run_id)
    return _of(row) if row is not None else None
