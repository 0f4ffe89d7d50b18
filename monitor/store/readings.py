"""Scrape readings in, intervals out: the stored intervals of an endpoint tile, whoever wrote what.

Every scrape's reading (cumulative counters, :mod:`monitor.scrape.stored`) is written as a
``reading`` op. The store keeps the first reading per (endpoint, slot) in fleet mode (per
(endpoint, time) otherwise) and derives **every interval from two consecutive stored readings**
of the endpoint, so the stored intervals never overlap and leave no gap that any replica's
reading could fill, in whatever order the replicas' writes arrive:

* a reading after the last one adds the interval (last, new];
* a reading between two stored readings (a replica's write that arrives late, e.g. replayed
  from its spool) splits the interval (or gap) between them: the old interval and its event
  slices are removed (the rollups and the evaluations they fed are corrected) and the two
  halves are derived;
* a reading that falls inside an interval whose first reading is no longer kept (a day) is
  dropped: nothing it could split is left.

Two consecutive readings more than :data:`~monitor.conventions.SCRAPE_GAP_LIMIT` apart are a
**gap** (``scrape_gaps``, with the requests the server finished in it): their events count in
no SLI, as the rules do not count them either. A gap nobody could fill is a gap, counted and
visible (``m3mon_store_scrape_gaps_total``). Writes of one endpoint are serialized by a lock on
its ``endpoints`` row, so two replicas never derive from the same neighbours at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from monitor import conventions as cv
from monitor.model import Model
from monitor.scrape import signals
from monitor.scrape.reading import Reading
from monitor.scrape.stored import reading_from_dict, reading_to_dict
from monitor.slo.slices import slices_from_signals
from monitor.store.repos import EndpointRepo
from monitor.store.rows import remove_server_slices, signals_row, write_slices
from monitor.store.tables import EndpointRow, ScrapeGapRow, ScrapeIntervalRow, ScrapeReadingRow
from monitor.store.upsert import finite, insert_ignore

Op = dict[str, Any]
NEW, DUPLICATE, LATE = "new", "duplicate", "late"
R = ScrapeReadingRow


def reading_op(endpoint: str, reading: Reading, slot: int | None = None, replica: str | None = None) -> Op:
    """A scrape's reading for the store (``slot`` in fleet mode: the pair keeps the first)."""
    return {"op": "reading", "endpoint": endpoint, "slot": slot, "replica": replica,
            "reading": finite(reading_to_dict(reading))}  # fmt: skip


def lock_endpoints(session: Session, names: Iterable[str]) -> None:
    """Create and lock the endpoints' rows, in name order (two writers never deadlock)."""
    for name in sorted(set(names)):
        EndpointRepo(session).ensure(name)
        session.execute(select(EndpointRow.id).where(EndpointRow.name == name).with_for_update())


def _neighbour(session: Session, endpoint: str, t: float, before: bool) -> ScrapeReadingRow | None:
    q = select(R).where(R.endpoint == endpoint)
    q = q.where(R.time < t).order_by(R.time.desc()) if before else q.where(R.time > t).order_by(R.time)
    return session.scalars(q.limit(1)).first()


def _ending_at(session: Session, endpoint: str, end: float) -> tuple[str, float | None] | None:
    """("interval" | "gap", its start) of what ends at reading time ``end``, if anything."""
    i = ScrapeIntervalRow
    start = session.scalars(select(i.start).where(i.endpoint == endpoint, i.end == end)).first()
    if start is not None:
        return "interval", start
    g = ScrapeGapRow
    gap = session.scalars(select(g.start).where(g.endpoint == endpoint, g.end == end)).first()
    return ("gap", gap) if gap is not None else None


def _remove(session: Session, endpoint: str, kind: str, end: float) -> None:
    if kind == "gap":
        session.execute(
            delete(ScrapeGapRow).where(ScrapeGapRow.endpoint == endpoint, ScrapeGapRow.end == end)
        )
        return
    remove_server_slices(session, endpoint, end)
    i = ScrapeIntervalRow
    session.execute(delete(i).where(i.endpoint == endpoint, i.end == end))


def _derive(session: Session, model: Model, older: ScrapeReadingRow, newer: ScrapeReadingRow) -> bool:
    """Store what lies between two consecutive readings: an interval with its slices, or a gap
    (True)."""
    endpoint = newer.endpoint
    ep = next((e for e in model.endpoints if e.name == endpoint), None)
    a, b = reading_from_dict(older.reading), reading_from_dict(newer.reading)
    sig = signals(endpoint, b, a, model=ep.model if ep is not None else None)
    if b.time - a.time > cv.SCRAPE_GAP_LIMIT_SECONDS:
        row = {"endpoint": endpoint, "start": a.time, "end": b.time,
               "requests": None if sig.reset else sig.total.requests}  # fmt: skip
        insert_ignore(session, ScrapeGapRow.__table__, [row], ("endpoint", "end"))  # type: ignore[arg-type]
        return True
    row = finite(signals_row(endpoint, sig, newer.slot))
    if insert_ignore(session, ScrapeIntervalRow.__table__, [row], ("endpoint", "end"), any_conflict=True):  # type: ignore[arg-type]
        write_slices(session, [asdict(s) for s in slices_from_signals(model, endpoint, sig)])
    return False


def apply_reading(session: Session, op: Op, model: Model) -> tuple[str, int]:
    """Store one reading and derive the intervals it bounds; (outcome, gaps recorded)."""
    endpoint = str(op["endpoint"])
    lock_endpoints(session, [endpoint])
    t = float(op["reading"]["time"])
    row = {"endpoint": endpoint, "slot": op.get("slot"), "time": t, "replica": op.get("replica"),
           "reading": op["reading"]}  # fmt: skip
    if not insert_ignore(session, R.__table__, [row], ("endpoint", "time"), any_conflict=True):  # type: ignore[arg-type]
        return DUPLICATE, 0
    new = session.scalars(select(R).where(R.endpoint == endpoint, R.time == t)).one()
    prev, nxt = _neighbour(session, endpoint, t, True), _neighbour(session, endpoint, t, False)
    gaps = 0
    if nxt is not None:
        ending = _ending_at(session, endpoint, nxt.time)
        if ending is not None and ending[1] != (prev.time if prev is not None else None):
            session.delete(new)  # it falls in an interval whose first reading is gone: nothing to split
            return LATE, 0
        if ending is not None:
            _remove(session, endpoint, ending[0], nxt.time)
        gaps += _derive(session, model, new, nxt)
    if prev is not None:
        gaps += _derive(session, model, prev, new)
    return NEW, gaps
