"""A throwaway PostgreSQL cluster for benches (tests/support/postgres.py's, started here)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.footprint import free_port
from tests.support.postgres import PG_BIN, PostgresCluster


def start_postgres(tmp: Path) -> PostgresCluster:
    """initdb and start a cluster under ``tmp / "pg"`` (as the postgres user); the caller stops it."""
    root = tmp / "pg"
    root.mkdir()
    shutil.chown(root, "postgres", "postgres")
    cluster = PostgresCluster(f"{PG_BIN}/pg_ctl", root / "data", free_port(), root / "log")
    cmd = ["runuser", "-u", "postgres", "--", f"{PG_BIN}/initdb", "-D", str(cluster.data), "-A", "trust",
           "-U", "postgres", "--no-sync", "-E", "UTF8"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    cluster.start()
    return cluster


@contextmanager
def throwaway_postgres(tmp: Path) -> Iterator[str | None]:
    """A running cluster's URL under ``tmp``, stopped on exit; None when PostgreSQL's binaries are
    missing or this is not root (initdb runs as the postgres user)."""
    if not os.path.exists(f"{PG_BIN}/initdb") or os.geteuid() != 0:
        yield None
        return
    os.chmod(tmp, 0o755)
    cluster = start_postgres(tmp)
    try:
        yield cluster.url
    finally:
        cluster.stop()
