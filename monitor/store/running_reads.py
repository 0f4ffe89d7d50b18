"""The SQL reads behind the running window sums (:mod:`monitor.store.running`): an SLO set's hourly
rollups, and the counted slices of a step's ranges summed per SLO, each as columns. On PostgreSQL
every column comes back as one array in its binary wire form and is read into numpy as it is: at
50,000 SLOs a Python number per row costs more than the step may take.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import orjson
from numpy.typing import NDArray
from sqlalchemy import CursorResult, func, literal, select, union_all
from sqlalchemy.orm import Session

from monitor.store.counts import hour_end_sql
from monitor.store.tables import EventSliceRow, SliceRollupRow

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


def rollups(
    session: Session, slo_ids: Sequence[str], base: float, top: float
) -> tuple[Ints, Floats, Floats, Floats]:
    """The rollups of ``slo_ids`` in ``(base, top]`` as columns: each one's SLO (its index in
    ``slo_ids``), hour end, good and total; in no particular order (the caller places each hour
    by its end). PostgreSQL: one row of four arrays in their binary wire form (``array_send``),
    read into numpy as they are — no Python number per rollup (32 days of 500 SLOs: 384,000)."""
    if session.get_bind().dialect.name == "postgresql":
        sql = (
            "SELECT array_send(array_agg(t.n - 1)), array_send(array_agg(r.hour_end)), "
            "array_send(array_agg(r.good)), array_send(array_agg(r.total)) FROM slice_rollups r "
            "JOIN json_array_elements_text(%s::json) WITH ORDINALITY AS t(slo_id, n) ON t.slo_id = r.slo_id "
            "WHERE r.slo_id = ANY(%s) AND r.hour_end > %s AND r.hour_end <= %s"
        )
        driver = cast(Any, session.connection().connection.driver_connection)
        with driver.cursor(binary=True) as cur:
            cur.execute(sql, (orjson.dumps(list(slo_ids)).decode(), list(slo_ids), base, top))
            row = cur.fetchone()
        if row is None or row[0] is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
        return _wire(row[0], ">i8"), _wire(row[1]), _wire(row[2]), _wire(row[3])
    r = SliceRollupRow
    where = (r.slo_id.in_(slo_ids), r.hour_end > base, r.hour_end <= top)
    q = select(r.slo_id, r.hour_end, r.good, r.total).where(*where)
    position = {s: k for k, s in enumerate(slo_ids)}
    got = [(position[str(s)], float(h), float(g), float(t)) for s, h, g, t in session.execute(q)]
    if not got:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    at, hours, good, total = zip(*got, strict=True)
    return np.array(at, dtype=np.int64), np.array(hours), np.array(good), np.array(total)


def _wire(data: bytes, kind: str = ">f8") -> NDArray[Any]:
    """A one-dimensional array without nulls of 8-byte numbers in PostgreSQL's binary form
    (``array_send``: a 20-byte header, then per element its length, 8, and its big-endian bytes)."""
    items = np.frombuffer(data, dtype=np.dtype([("length", ">i4"), ("value", kind)]), offset=20)
    assert (items["length"] == 8).all(), "an array with nulls or of another width"
    return items["value"].astype(np.dtype(kind).newbyteorder("="))


#: PostgreSQL: one range's sums (label 0: by SLO and hour end; else by SLO)
_PG_NEW = (
    'SELECT 0.0::float8 AS label, slo_id, ceil("end" / 3600.0) * 3600.0 AS hour, sum(good) AS good, '
    'sum(total) AS total FROM event_slices WHERE "end" > %s AND "end" <= %s AND maintenance IS NULL{ids} '
    "GROUP BY slo_id, 3"
)
_PG_HEAD = (
    "SELECT %s::float8, slo_id, 0.0::float8, sum(good), sum(total) FROM event_slices "
    'WHERE "end" > %s AND "end" <= %s AND maintenance IS NULL{ids} GROUP BY slo_id'
)

Columns = tuple[list[float], list[str], list[float], list[float], list[float]]


def range_sums(
    session: Session, ranges: Sequence[tuple[float, float, float]], slo_ids: Sequence[str] | None
) -> Columns:
    """Counted slices ending in each ``(lo, hi]``, summed per SLO: label 0 by hour end too (the
    step's new slices), other labels (a window length: a window's head) in one row per SLO; as
    columns (labels, SLO ids, hour ends, good, total). SQLite's; PostgreSQL's is
    :func:`pg_range_sums` (each column one binary array: 11 rows per SLO a step, row by row a
    tuple each cost several times more)."""
    s = EventSliceRow
    parts = []
    for label, lo, hi in ranges:
        hour = hour_end_sql(session) if label == 0.0 else literal(0.0)
        q = select(literal(label), s.slo_id, hour.label("hour"), func.sum(s.good), func.sum(s.total))
        q = q.where(s.end > lo, s.end <= hi, s.maintenance.is_(None))
        if slo_ids is not None:
            q = q.where(s.slo_id.in_(slo_ids))
        parts.append(q.group_by(s.slo_id, "hour") if label == 0.0 else q.group_by(s.slo_id))
    result = cast(CursorResult[Any], session.execute(union_all(*parts)))
    try:
        rows = result.cursor.fetchall()
    finally:
        result.close()
    if not rows:
        return [], [], [], [], []
    labels, ids, hours, good, total = (list(c) for c in zip(*rows, strict=True))
    return labels, [str(i) for i in ids], hours, good, total


def pg_range_sums(
    session: Session,
    ranges: Sequence[tuple[float, float, float]],
    slo_ids: Sequence[str] | None,
    rows: Sequence[str | None],
) -> tuple[list[float], list[int], list[float], list[float], list[float]]:
    """:func:`range_sums` on PostgreSQL with each SLO's index in ``rows`` in place of its id (SLOs
    not in ``rows`` left out): the ids are sent once as one JSON document and joined by the
    server, so no id is sent back and looked up per row."""
    ids = "" if slo_ids is None else " AND slo_id = ANY(%s)"
    parts: list[str] = []
    params: list[Any] = [orjson.dumps(rows).decode()]
    for label, lo, hi in ranges:
        parts.append((_PG_NEW if label == 0.0 else _PG_HEAD).format(ids=ids))
        params.extend([] if label == 0.0 else [label])
        params.extend([lo, hi] + ([] if slo_ids is None else [list(slo_ids)]))
    sql = (
        "WITH ids AS MATERIALIZED (SELECT slo_id, n - 1 AS row FROM json_array_elements_text(%s::json) "
        "WITH ORDINALITY AS t(slo_id, n)) "
        "SELECT array_agg(u.label), array_agg(ids.row), array_agg(u.hour), array_agg(u.good), "
        f"array_agg(u.total) FROM ({' UNION ALL '.join(parts)}) AS u JOIN ids USING (slo_id)"
    )
    driver = cast(Any, session.connection().connection.driver_connection)
    with driver.cursor(binary=True) as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    if row is None or row[0] is None:
        return [], [], [], [], []
    return row[0], row[1], row[2], row[3], row[4]
