"""One SLO evaluator for the whole fleet: a PostgreSQL session-level advisory lock.

Why one for the fleet and not one per shard: an SLO belongs to a request class, and a class's
endpoints are spread over shards by hashmod, so every evaluation reads events written by every
shard. A per-shard leader would compute the same class-level evaluations N times. One holder of
:data:`LOCK_KEY` evaluates; every other replica is a standby that retries the lock at each
evaluate run (every evaluation step or 15 s, whichever is shorter).

The lock lives on a dedicated connection in autocommit mode (never idle in a transaction),
with TCP keepalives: when the holder dies its session ends and PostgreSQL releases the lock (at
once on ``kill -9``, the kernel closes the socket; ~25 s after its host vanished, as the session
sets PostgreSQL's own ``tcp_keepalives_*``). A holder checks its connection before each run; if
it broke, it is no longer the evaluator and tries again like a standby. Evaluation writes are
idempotent (slo, window, instant), so even a brief overlap of two evaluators stores each
evaluation once.
"""

from __future__ import annotations

import hashlib
import logging
from contextlib import suppress

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from monitor.store.engine import display_url, normalize_url

log = logging.getLogger(__name__)

#: pg advisory lock key: the first 8 bytes of md5("m3mon-evaluator") as a signed 64-bit integer.
LOCK_KEY = int.from_bytes(
    hashlib.md5(b"m3mon-evaluator", usedforsecurity=False).digest()[:8], "big", signed=True
)
#: Keepalives both ways: the client's (libpq) notice a dead server, the session's server-side
#: settings make PostgreSQL end the session (and release the lock) ~25 s after the host vanished.
KEEPALIVE: dict[str, object] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "options": "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3",
}


class EvaluatorLock:
    """Try to be (or stay) the fleet's evaluator; ``held()`` answers at each evaluate run."""

    def __init__(self, url: str, key: int = LOCK_KEY) -> None:
        self.key = key
        self.shown = display_url(url)
        self.engine = create_engine(
            normalize_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT",
            connect_args={"connect_timeout": 5, **KEEPALIVE},
        )  # fmt: skip
        self.conn: Connection | None = None

    def held(self) -> bool:
        """True when this process holds the lock now (acquiring it if it is free)."""
        if self.conn is not None:
            try:
                self.conn.execute(text("SELECT 1"))
                return True
            except SQLAlchemyError as exc:
                log.warning("evaluator lock session lost (%s): standing by", type(exc).__name__)
                self._drop()
        try:
            conn = self.engine.connect()
        except SQLAlchemyError as exc:
            log.warning("evaluator lock: cannot connect to %s (%s)", self.shown, type(exc).__name__)
            return False
        try:
            got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar())
        except SQLAlchemyError:
            conn.close()
            return False
        if not got:
            conn.close()
            return False
        log.info("this replica is now the fleet's SLO evaluator (advisory lock %d)", self.key)
        self.conn = conn
        return True

    def _drop(self) -> None:
        if self.conn is not None:
            with suppress(SQLAlchemyError):
                self.conn.close()
            self.conn = None

    def give_up(self) -> None:
        """Release the lock (close its session) but stay able to take it again later."""
        if self.conn is not None:
            log.warning("released the evaluator lock %d", self.key)
        self._drop()

    def release(self) -> None:
        """Give the lock up (clean shutdown): closing the session releases it."""
        self._drop()
        self.engine.dispose()
