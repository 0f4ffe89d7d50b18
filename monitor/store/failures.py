"""Why a store write failed: the database is away (keep the op, retry it) or the op is bad (set it aside).

:func:`database_away` is True only when the failure says nothing about the op: the database cannot
be reached or used right now, and the same op will go through once it can. Everything else is the
op's own fault (a value too long for its column, a NUL byte, a violated constraint, a malformed
op); retrying it would fail forever and hold up every op behind it, so the buffered writer
dead-letters it instead (:data:`dead_letter_reason` names why, from
:data:`monitor.conventions.DEAD_LETTER_REASONS`).

"Away", on PostgreSQL (psycopg 3):

* any failure to connect or a lost connection: ``OperationalError``/``InterfaceError`` from psycopg
  without a SQLSTATE (refused, timed out, wrong password, no such database, server closed the
  connection), or one SQLAlchemy marked as a disconnect (``connection_invalidated``);
* SQLSTATE classes 08 (connection exception), 28 (authorization), 3D (no such database),
  40 (serialization failure, deadlock: retry), 53 (disk full, out of memory, too many
  connections), 57 (admin/crash shutdown, starting up; not 57014, a cancelled statement), 58 (I/O
  error), F0 (configuration file error), and 25006 (read-only: a standby after a failover), 55P03
  (lock not available), 42P01 / 42703 / 3F000 (tables, columns or schema missing: the store is not
  migrated, or was dropped), 42501 (permission denied: the role lacks its grants);

on SQLite: SQLITE_BUSY, LOCKED, NOMEM, READONLY, IOERR, CORRUPT, FULL, CANTOPEN (the database's
directory vanished), PROTOCOL and NOTADB, and "no such table"/"no such column"/"has no column
named" (the file was deleted and an empty one opened in its place, or it is not migrated); and
``OSError``, a SQLAlchemy pool timeout or disconnection anywhere.
"""

from __future__ import annotations

import sqlite3

import psycopg
from sqlalchemy import exc as sa

from monitor.errors import M3MonError, StoreError
from monitor.redact import one_line

_PG_AWAY_CLASSES = frozenset({"08", "28", "3D", "40", "53", "57", "58", "F0"})
_PG_AWAY_STATES = frozenset({"25006", "55P03", "42P01", "42703", "3F000", "42501"})
_PG_CONNECT_CLASSES = frozenset({"08", "28", "3D"})
_PG_NOT_AWAY = frozenset({"57014"})  # query_canceled: a statement timeout says nothing about the server
# SQLite primary result codes (the low byte of an extended code).
_SQLITE_AWAY = frozenset({5, 6, 7, 8, 10, 11, 13, 14, 15, 26})
_SQLITE_SCHEMA_GONE = ("no such table", "no such column", "has no column named")


def _cause(exc: BaseException) -> BaseException:
    """The DBAPI exception SQLAlchemy wrapped, or ``exc`` itself."""
    orig = getattr(exc, "orig", None) if isinstance(exc, sa.DBAPIError) else None
    return orig if isinstance(orig, BaseException) else exc


def _pg_away(err: psycopg.Error) -> bool:
    state = err.sqlstate
    if state is None:
        return isinstance(err, psycopg.OperationalError | psycopg.InterfaceError)
    if state in _PG_NOT_AWAY:
        return False
    return state[:2] in _PG_AWAY_CLASSES or state in _PG_AWAY_STATES


def _sqlite_away(err: sqlite3.Error) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _SQLITE_AWAY:
        return True
    return isinstance(err, sqlite3.OperationalError) and any(s in str(err) for s in _SQLITE_SCHEMA_GONE)


def _connection_lost(exc: BaseException) -> bool:
    """The socket, the pool or SQLAlchemy itself says the connection is gone (either dialect)."""
    return isinstance(exc, OSError | sa.DisconnectionError | sa.TimeoutError) or (
        isinstance(exc, sa.DBAPIError) and exc.connection_invalidated
    )


def database_away(exc: BaseException) -> bool:
    """True when ``exc`` means the database cannot take writes now (spool and retry the op)."""
    if _connection_lost(exc):
        return True
    cause = _cause(exc)
    if isinstance(cause, psycopg.Error):
        return _pg_away(cause)
    if isinstance(cause, sqlite3.Error):
        return _sqlite_away(cause)
    return isinstance(cause, OSError)


def cannot_connect(exc: BaseException) -> bool:
    """True when ``exc`` means no connection could be made or kept (a subset of :func:`database_away`)."""
    if _connection_lost(exc):
        return True
    cause = _cause(exc)
    if isinstance(cause, psycopg.Error):
        state = cause.sqlstate
        return _pg_away(cause) if state is None else state[:2] in _PG_CONNECT_CLASSES
    code = getattr(cause, "sqlite_errorcode", None)
    return isinstance(cause, OSError) or (isinstance(code, int) and code & 0xFF == 14)  # SQLITE_CANTOPEN


#: What a server says when it answered and refused who we are or what we asked for (libpq reports
#: these with no SQLSTATE): waiting does not mend them, so ``m3mon run`` does not start on them.
_REFUSALS = ("authentication failed", "no pg_hba.conf entry", "does not exist")


def refused(exc: BaseException) -> bool:
    """True when the database answered and refused the connection's credentials or database
    (a wrong password, an unknown role or database), as opposed to not answering at all."""
    text = str(_cause(exc))
    return "FATAL:" in text and any(r in text for r in _REFUSALS)


def dead_letter_reason(exc: BaseException) -> str:
    """Why an op failed on its own (one of ``conventions.DEAD_LETTER_REASONS``)."""
    if isinstance(exc, sa.DataError):
        return "data_error"
    if isinstance(exc, sa.IntegrityError):
        return "integrity_error"
    cause = _cause(exc)
    binding = isinstance(cause, sqlite3.ProgrammingError | sqlite3.InterfaceError | psycopg.ProgrammingError)
    if binding and getattr(cause, "sqlstate", None) is None:
        return "data_error"  # a value the driver cannot bind (e.g. a dict for a text column)
    if isinstance(exc, sa.StatementError) and not isinstance(exc, sa.DBAPIError):
        return "data_error"  # a value SQLAlchemy could not convert for its column
    if isinstance(exc, ValueError | LookupError | TypeError | M3MonError | sa.CompileError):
        return "invalid_op"
    return "other"


def describe(exc: BaseException) -> str:
    """The reason in a few words, redacted: ``connection refused``, ``value too long for …``."""
    text = one_line(str(_cause(exc)).split("\n", 1)[0]) or type(exc).__name__
    if text.startswith("connection failed:"):  # psycopg: … at "h", port 1 failed: Connection refused
        text = text.rsplit(" failed: ", 1)[-1].removeprefix("connection failed:")
    text = text.removeprefix("FATAL:").strip()
    first = text.split(" ", 1)[0]
    if len(first) > 1 and first[0].isupper() and first[1:].islower():  # "Connection", not "PostgreSQL"
        text = text[0].lower() + text[1:]
    return text


def database_of(exc: BaseException) -> str | None:
    """The (password-free) URL of the database ``exc`` came from, when the store's engine knew it."""
    url = getattr(exc, "m3mon_database", None)
    return url if isinstance(url, str) else None


def store_error(exc: BaseException, url: str | None = None) -> StoreError:
    """One line for a failed database operation: ``database unreachable: URL (connection refused)``."""
    what = "database unreachable" if cannot_connect(exc) else "database error"
    where = url or database_of(exc)
    return StoreError(f"{what}: {where} ({describe(exc)})" if where else f"{what} ({describe(exc)})")
