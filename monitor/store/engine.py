"""Engines for the store: SQLite (embedded default) or PostgreSQL via psycopg 3.

SQLite connections get ``journal_mode=WAL``, ``foreign_keys=ON`` and a busy timeout on every
connect. File-backed SQLite uses no connection pool, so a database that disappears (its
directory removed or renamed) is noticed on the next write instead of being written through a
stale open file. PostgreSQL URLs ``postgresql://`` are mapped to ``postgresql+psycopg://`` and
pooled with pre-ping, so a restarted server is reconnected transparently.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool


def normalize_url(url: str) -> str:
    """Use psycopg 3 for PostgreSQL unless a driver is named."""
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    return u.render_as_string(hide_password=False)


def display_url(url: str) -> str:
    """``url`` fit for output and logs: the password, if any, shown as ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    try:
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=5000")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
    finally:
        cur.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the store's connection settings."""
    url = normalize_url(url)
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        memory = u.database in (None, "", ":memory:")
        engine = create_engine(url, poolclass=None if memory else NullPool)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, connect_args={"connect_timeout": 5})
