"""Engines for the store: SQLite (embedded default) or PostgreSQL via psycopg 3.

SQLite connections get ``journal_mode=WAL``, ``foreign_keys=ON`` and a busy timeout on every
connect. File-backed SQLite uses no connection pool, so a database that disappears (its
directory removed or renamed) is noticed on the next write instead of being written through a
stale open file. PostgreSQL URLs ``postgresql://`` are mapped to ``postgresql+psycopg://`` and
pooled with pre-ping, so a restarted server is reconnected transparently; a connection attempt
gives up after 5 s unless the URL says otherwise (``?connect_timeout=2``).

Every engine remembers its URL's password for :mod:`monitor.redact` (so it never reaches output
or logs) and tags each error it raises with the password-free URL (``exc.m3mon_database``, read
by :func:`monitor.store.failures.database_of`), so a failure can name the database it concerns.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool

from monitor import redact

#: Seconds a PostgreSQL connection attempt may take (``connect_timeout`` in the URL overrides it).
CONNECT_TIMEOUT = 5


def normalize_url(url: str) -> str:
    """Use psycopg 3 for PostgreSQL unless a driver is named."""
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    return u.render_as_string(hide_password=False)


def sqlite_file(url: str) -> str | None:
    """The database file of a SQLite URL (None: not SQLite, or in memory)."""
    try:
        u = make_url(url)
    except ArgumentError:
        return None
    if u.get_backend_name() != "sqlite" or u.database in (None, "", ":memory:"):
        return None
    return str(u.database)


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


def _tagger(shown: str) -> Any:
    def tag(context: ExceptionContext) -> None:
        for exc in (context.sqlalchemy_exception, context.original_exception):
            if exc is not None:
                exc.m3mon_database = shown  # type: ignore[attr-defined]

    return tag


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the store's connection settings."""
    redact.remember_url(url)
    url = normalize_url(url)
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        memory = u.database in (None, "", ":memory:")
        engine = create_engine(url, poolclass=None if memory else NullPool)
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        args = {} if "connect_timeout" in u.query else {"connect_timeout": CONNECT_TIMEOUT}
        engine = create_engine(url, pool_pre_ping=True, pool_size=5, connect_args=args)
    event.listen(engine, "handle_error", _tagger(display_url(url)))
    return engine
