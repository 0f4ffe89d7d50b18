"""Idempotent inserts that work on SQLite and PostgreSQL alike.

Both dialects speak ``INSERT ... ON CONFLICT``; SQLAlchemy exposes it through each dialect's own
``insert``. Every replayable write goes through these helpers keyed by the table's natural key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson
from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

CHUNK = 400


def dialect_insert(session: Session, table: Table) -> Any:
    """The dialect's own ``INSERT`` (it has ``on_conflict_do_*``) for ``session``'s database."""
    name = session.get_bind().dialect.name
    if name == "postgresql":
        return postgresql.insert(table)
    if name == "sqlite":
        return sqlite.insert(table)
    raise ValueError(f"unsupported database dialect {name!r} (use sqlite or postgresql)")


def insert_ignore(
    session: Session,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    *,
    any_conflict: bool = False,
) -> list[Mapping[str, Any]]:
    """Insert rows whose natural ``keys`` are new; returns the rows actually inserted (of rows
    sharing a key, the first: ``ON CONFLICT DO NOTHING`` skips the later ones on both dialects).

    ``any_conflict``: skip a row that conflicts with any unique constraint (``ON CONFLICT DO
    NOTHING`` without a target), e.g. a fleet slot identity besides the natural key.
    """
    inserted: list[Mapping[str, Any]] = []
    target = None if any_conflict else list(keys)
    for i in range(0, len(rows), CHUNK):
        chunk = list(rows[i : i + CHUNK])
        stmt = dialect_insert(session, table).values(chunk).on_conflict_do_nothing(index_elements=target)
        stmt = stmt.returning(*(table.c[k] for k in keys))
        new = {tuple(r) for r in session.execute(stmt)}
        for row in chunk:  # a key twice in one chunk: the database kept the first row only
            key = tuple(row[k] for k in keys)
            if key in new:
                new.discard(key)
                inserted.append(row)
    return inserted


def insert_many_ignore(
    session: Session, table: Table, rows: Sequence[Mapping[str, Any]], keys: Sequence[str]
) -> None:
    """Insert rows whose natural ``keys`` are new, for large batches whose inserted rows nobody
    needs: on PostgreSQL one ``INSERT … SELECT FROM json_to_recordset(<the rows as one JSON
    document>)`` (one statement, one parameter and one round trip for any number of rows; the
    server parses the document, the driver escapes nothing), elsewhere one executemany. The rows'
    values must be JSON-able and finite (:func:`finite`), or numpy arrays (:func:`plain`)."""
    if not rows:
        return
    if session.get_bind().dialect.name != "postgresql":
        stmt = dialect_insert(session, table).on_conflict_do_nothing(index_elements=list(keys))
        session.execute(stmt, [plain(r) for r in rows])
        return
    dialect = session.get_bind().dialect
    cols = list(rows[0])
    quote = dialect.identifier_preparer.quote
    record = ", ".join(f"{quote(c)} {table.c[c].type.compile(dialect=dialect)}" for c in cols)
    quoted = ", ".join(quote(c) for c in cols)
    sql = (
        f"INSERT INTO {table.name} ({quoted}) SELECT {quoted} "
        f"FROM json_to_recordset(%s::json) AS r({record}) "
        f"ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO NOTHING"
    )
    doc = orjson.dumps(list(rows), option=orjson.OPT_SERIALIZE_NUMPY)  # NaN and ±Inf: null
    session.connection().exec_driver_sql(sql, (doc.decode(),))


def upsert_add(
    session: Session, table: Table, rows: Sequence[Mapping[str, Any]], keys: Sequence[str], add: Sequence[str]
) -> None:
    """Insert rows, or add their ``add`` columns onto the existing row with the same keys."""
    for i in range(0, len(rows), CHUNK):
        stmt = dialect_insert(session, table).values(list(rows[i : i + CHUNK]))
        stmt = stmt.on_conflict_do_update(
            index_elements=list(keys), set_={c: table.c[c] + stmt.excluded[c] for c in add}
        )
        session.execute(stmt)


def upsert_replace(
    session: Session,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    update: Sequence[str],
) -> None:
    """Insert rows, or overwrite the ``update`` columns of the existing row with the same keys."""
    for i in range(0, len(rows), CHUNK):
        stmt = dialect_insert(session, table).values(list(rows[i : i + CHUNK]))
        stmt = stmt.on_conflict_do_update(
            index_elements=list(keys), set_={c: stmt.excluded[c] for c in update}
        )
        session.execute(stmt)


def plain(value: Any) -> Any:
    """``value`` with numpy arrays as lists (NaN and ±Inf as None): what the JSON columns'
    serializer takes (PostgreSQL's path serializes the arrays as they are)."""
    if isinstance(value, np.ndarray):
        return [x if math.isfinite(x) else None for x in value.tolist()]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def finite(value: Any) -> Any:
    """``value`` with NaN and ±Inf floats replaced by None (PostgreSQL JSON rejects them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value
