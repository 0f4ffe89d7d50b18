"""Writing a generated history: in bulk through the store's ops, and through an outage.

The ops are the ones the service writes (:mod:`monitor.store.ops`: ``probe_op``, ``signals_op``,
``spans_op``, ``deployment_op``, ``evaluations_op``). :func:`apply_bulk` applies many of them in one
transaction with the same idempotent inserts :func:`monitor.store.ops.apply_op` uses (natural keys,
``ON CONFLICT DO NOTHING``, rollups added only for slices actually inserted), batched per table
instead of row by row. :func:`through_outage` sends ops through the real
:class:`~monitor.store.BufferedWriter` while the database is away: they are spooled to disk and
replayed, in order and once each, when it is back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from monitor.store import BufferedWriter, Store
from monitor.store.counts import rebuild_rollups
from monitor.store.ops import Op
from monitor.store.tables import EventSliceRow, ProbeResultRow, ScrapeIntervalRow, ServerSpanRow

#: Ops per bulk transaction.
BATCH = 5000
_TABLES: dict[str, tuple[Table, tuple[str, ...]]] = {
    "probe": (ProbeResultRow.__table__, ("endpoint", "request_class", "kind", "started_at")),  # type: ignore[dict-item]
    "scrape": (ScrapeIntervalRow.__table__, ("endpoint", "end")),  # type: ignore[dict-item]
    "spans": (ServerSpanRow.__table__, ("trace_id", "span_id")),  # type: ignore[dict-item]
}
_SLICES: tuple[Table, tuple[str, ...]] = (EventSliceRow.__table__, ("slo_id", "endpoint", "origin", "end"))  # type: ignore[assignment]


@dataclass(frozen=True)
class Outage:
    """How to take the database away and bring it back (e.g. rename its folder and back)."""

    down: Callable[[], None]
    up: Callable[[], None]


def folder_outage(database: Path) -> Outage:
    """An outage of a SQLite file database: its folder is renamed away, then back."""
    folder = database.parent
    away = folder.with_name(folder.name + ".away")

    def down() -> None:
        folder.rename(away)

    def up() -> None:
        away.rename(folder)

    return Outage(down, up)


def _rows(op: Op) -> list[dict[str, Any]]:
    return list(op["rows"]) if "rows" in op else [op["row"]]


def insert_new(
    session: Session, table: Table, rows: Sequence[Mapping[str, Any]], keys: Sequence[str]
) -> None:
    """``INSERT … ON CONFLICT (keys) DO NOTHING`` of many rows as one executemany (SQLite, PostgreSQL)."""
    if not rows:
        return
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(table).on_conflict_do_nothing(index_elements=list(keys))
    session.execute(stmt, list(rows))


def apply_bulk(store: Store, ops: Sequence[Op]) -> None:
    """Apply probe, scrape and spans ops (rows and event slices) in batches, idempotently.

    The hourly rollups are not touched: call :func:`monitor.store.counts.rebuild_rollups` after
    the last batch (:func:`finish`), as the store documents for bulk loads.
    """
    for i in range(0, len(ops), BATCH):
        batch = ops[i : i + BATCH]
        with store.session() as session:
            for kind, (table, keys) in _TABLES.items():
                insert_new(session, table, [r for op in batch if op["op"] == kind for r in _rows(op)], keys)
            insert_new(session, *_SLICES[:1], [s for op in batch for s in op.get("slices", ())], _SLICES[1])


def finish(store: Store) -> int:
    """Rebuild the hourly rollups from the raw slices; returns the rollup rows written."""
    with store.session() as session:
        return rebuild_rollups(session)


def through_outage(store: Store, ops: Sequence[Op], buffer_dir: Path, outage: Outage) -> int:
    """Submit ``ops`` while the database is away, bring it back and replay; returns ops spooled."""
    writer = BufferedWriter(store, buffer_dir)
    quiet = logging.getLogger("monitor.store.buffer")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "store unavailable" is the point here, not news
    try:
        outage.down()
        try:
            spooled = sum(not writer.submit(op) for op in ops)
        finally:
            outage.up()
        writer.flush()
    finally:
        quiet.setLevel(level)
    if writer.backlog:
        raise RuntimeError(f"history: {writer.backlog} spooled writes were not replayed")
    return spooled
