"""A throwaway PostgreSQL cluster for tests (session-scoped fixture ``postgres_url``).

``initdb`` and ``pg_ctl`` from /usr/lib/postgresql/15/bin run as the ``postgres`` OS user (tests
run as root), with the data directory and the unix socket in a temporary directory owned by
postgres, trust authentication, listening on 127.0.0.1 on a free port. The cluster is stopped
(``pg_ctl stop -m immediate``) and its directory removed afterwards, always. Skips when the
binaries are missing unless ``M3MON_REQUIRE_REAL=1``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.support.real import require_binary

PG_BIN = "/usr/lib/postgresql/15/bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresCluster:
    """A running cluster; ``stop()``/``start()`` simulate an outage."""

    pg_ctl: str
    data: Path
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        cmd = ["runuser", "-u", "postgres", "--", self.pg_ctl, "-D", str(self.data), *args]
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data.parent} -c fsync=off"
        self._ctl("-l", str(self.log), "-w", "-t", "30", "-o", opts, "start")

    def stop(self) -> None:
        self._ctl("-m", "immediate", "-w", "-t", "30", "stop")

    def kill(self) -> None:
        """Last resort when pg_ctl cannot stop it: SIGKILL the postmaster we started."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@contextmanager
def own_cluster() -> Iterator[PostgresCluster]:
    """A new cluster of its own (a test that stops its server uses one, not the shared one)."""
    initdb = require_binary("initdb", f"{PG_BIN}/initdb")
    pg_ctl = require_binary("pg_ctl", f"{PG_BIN}/pg_ctl")
    require_binary("runuser")
    root = Path(tempfile.mkdtemp(prefix="m3mon-pg-"))
    shutil.chown(root, "postgres", "postgres")
    os.chmod(root, 0o700)
    data = root / "data"
    cluster = PostgresCluster(pg_ctl, data, free_port(), root / "postgres.log")
    try:
        initdb_args = ["-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]
        subprocess.run(
            ["runuser", "-u", "postgres", "--", initdb, *initdb_args],
            check=True,
            capture_output=True,
            timeout=120,
        )
        cluster.start()
        yield cluster
    finally:
        if cluster.running():
            try:
                cluster.stop()
            except subprocess.SubprocessError:
                cluster.kill()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    with own_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """SQLAlchemy URL of the throwaway cluster's ``postgres`` database."""
    return postgres_cluster.url


@contextmanager
def fresh_database(server_url: str, prefix: str = "t") -> Iterator[str]:
    """URL of a new, empty database on the server of ``server_url``; dropped afterwards, always."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield server_url.rsplit("/", 1)[0] + f"/{name}"
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
