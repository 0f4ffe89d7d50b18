"""Evaluation progress: which steps are final, and which must be evaluated again after a late write.

Two facts per SLO live in ``evaluation_progress``: ``evaluated_until``, the latest instant the
evaluator has **announced** it evaluates (written and committed before it reads any count), and
``dirty_since``, the earliest end of a slice written or removed after its step was evaluated.

A write that changes counts (:func:`mark_late`, called for every new counted slice and every
removed one) takes a share lock on the SLO's progress row and marks it dirty when its slice
ends at or before ``evaluated_until``. The evaluator's announcement needs the row exclusively,
so it waits for writes in flight; a write that commits before the announcement is seen by the
evaluation, one that starts after it sees the announcement and marks the step dirty. No write
is ever missed by both. The evaluator evaluates the dirty steps again and clears the mark only if
nothing marked it since (``dirty_version``).

Fleet mode adds ``writer_progress``: each replica's own horizon (its spool holds nothing before
it). The evaluator finalizes a step once every live replica has written past it, or once
:data:`FINAL_STEPS` evaluation steps have passed (a late write then re-evaluates the step instead
of being lost). A replica is live while it reported within :data:`LIVE_STEPS` steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import orjson
from sqlalchemy import case, select, update
from sqlalchemy.orm import Session

from monitor.slo.due import Dirty
from monitor.store.tables import EvaluationProgressRow, WriterProgressRow
from monitor.store.upsert import dialect_insert, upsert_replace

#: A replica is live while its progress row is at most this many evaluation steps old (plus
#: LIVE_SLACK seconds): the fleet does not wait for one that stopped reporting.
LIVE_STEPS = 2
LIVE_SLACK = 5.0
#: A step is final this many evaluation steps after its instant even if a live replica has not
#: written past it (its later writes then re-evaluate the step).
FINAL_STEPS = 5
#: :func:`dirty` for more SLOs than this reads every mark instead of listing the SLOs
MANY = 500


def mark_late(session: Session, ends: Mapping[str, float]) -> None:
    """Mark each SLO of ``ends`` (SLO id -> earliest end of a slice written or removed now) dirty
    where the evaluator already evaluated that instant."""
    if not ends:
        return
    p = EvaluationProgressRow
    rows = session.execute(
        select(p.slo_id, p.evaluated_until).where(p.slo_id.in_(sorted(ends))).with_for_update(read=True)
    ).all()
    for slo_id, until in rows:
        end = ends[slo_id]
        if end <= until:
            since = case((p.dirty_since.is_(None), end), (p.dirty_since > end, end), else_=p.dirty_since)
            values = {"dirty_since": since, "dirty_version": p.dirty_version + 1}
            session.execute(update(p).where(p.slo_id == slo_id).values(**values))


def announce(session: Session, until: Mapping[str, float]) -> None:
    """Record that the evaluator evaluates each SLO up to ``until[slo]`` (commit before reading):
    the upsert waits for the writes holding a share lock on the row."""
    if not until:
        return
    if session.get_bind().dialect.name == "postgresql":
        _announce_postgres(session, until)
        return
    table = EvaluationProgressRow.__table__
    # in SLO id order, the order writers take their share locks in: the two never deadlock
    rows = [
        {"slo_id": k, "evaluated_until": v, "dirty_since": None, "dirty_version": 0}
        for k, v in sorted(until.items())
    ]
    stmt = dialect_insert(session, table)  # type: ignore[arg-type]
    later = case(
        (table.c.evaluated_until > stmt.excluded.evaluated_until, table.c.evaluated_until),
        else_=stmt.excluded.evaluated_until,
    )
    # one executemany, rows in order: the row locks are taken in SLO id order
    session.execute(
        stmt.on_conflict_do_update(index_elements=["slo_id"], set_={"evaluated_until": later}), rows
    )


def _announce_postgres(session: Session, until: Mapping[str, float]) -> None:
    """:func:`announce` as one statement over one JSON object of SLO id -> instant (50,000 SLOs:
    one round trip, not one upsert per SLO; one document the server parses, not two arrays the
    driver builds element by element), the rows inserted in SLO id order as above."""
    sql = (
        "INSERT INTO evaluation_progress (slo_id, evaluated_until, dirty_since, dirty_version) "
        "SELECT r.key, CAST(r.value AS float8), NULL, 0 FROM json_each_text(%s::json) AS r "
        "ORDER BY r.key "
        "ON CONFLICT (slo_id) DO UPDATE SET evaluated_until = CASE "
        "WHEN evaluation_progress.evaluated_until > excluded.evaluated_until "
        "THEN evaluation_progress.evaluated_until ELSE excluded.evaluated_until END"
    )
    doc = orjson.dumps({k: float(v) for k, v in until.items()}).decode()
    session.connection().exec_driver_sql(sql, (doc,))


def dirty(session: Session, slo_ids: Sequence[str]) -> list[Dirty]:
    """The dirty marks of ``slo_ids``. Marks are few: for many SLOs every mark is read and the
    wanted ones kept (no ``IN`` list of 50,000 ids to send and parse)."""
    p = EvaluationProgressRow
    q = select(p.slo_id, p.dirty_since, p.dirty_version).where(p.dirty_since.is_not(None))
    if len(slo_ids) <= MANY:
        q = q.where(p.slo_id.in_(slo_ids))
    wanted = set(slo_ids)
    return [Dirty(s, float(d), int(v)) for s, d, v in session.execute(q) if d is not None and s in wanted]


def advance(session: Session, mark: Dirty, since: float | None) -> None:
    """Move a dirty mark that was evaluated on to ``since`` (None: clear it), unless a newer mark
    arrived meanwhile (its version differs: it stays, from the earlier of the two)."""
    p = EvaluationProgressRow
    session.execute(
        update(p).where(p.slo_id == mark.slo_id, p.dirty_version == mark.version).values(dirty_since=since)
    )


def any_dirty(session: Session) -> bool:
    p = EvaluationProgressRow
    return session.scalar(select(p.slo_id).where(p.dirty_since.is_not(None)).limit(1)) is not None


def report(session: Session, replica: str, complete_until: float, now: float) -> None:
    """This replica's writes are all in the store up to ``complete_until`` (fleet mode)."""
    row = {"replica": replica, "complete_until": complete_until, "updated_at": now}
    table = WriterProgressRow.__table__
    upsert_replace(session, table, [row], ("replica",), ("complete_until", "updated_at"))  # type: ignore[arg-type]


def fleet_complete_until(session: Session, now: float, own: float, step: float) -> float:
    """Up to when every live replica's writes are in the store (``own``: this replica's horizon),
    never earlier than ``FINAL_STEPS`` evaluation steps ago."""
    w = WriterProgressRow
    fresh = now - LIVE_STEPS * step - LIVE_SLACK
    live = session.scalars(select(w.complete_until).where(w.updated_at >= fresh)).all()
    return max(min([own, *live]), now - FINAL_STEPS * step)
