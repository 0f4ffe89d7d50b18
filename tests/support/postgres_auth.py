"""A password-checked role on the throwaway PostgreSQL cluster (fixture ``pg_password_role``).

The cluster of :mod:`tests.support.postgres` trusts every local connection, so any password is
accepted. This adds one role, ``m3mon_pw``, that must give its password (``scram-sha-256``, a
``pg_hba.conf`` line above the trust lines, reloaded); every other role stays trusted. Idempotent:
several test packages may ask for it in one session.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from tests.support.postgres import PostgresCluster

ROLE = "m3mon_pw"
PASSWORD = "right-Pa55-word"
_HBA = f"host all {ROLE} 127.0.0.1/32 scram-sha-256\n"


@dataclass(frozen=True)
class PasswordRole:
    port: int

    def url(self, password: str = PASSWORD, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{ROLE}:{password}@127.0.0.1:{self.port}/{database}"


@pytest.fixture(scope="session")
def pg_password_role(postgres_cluster: PostgresCluster) -> PasswordRole:
    admin = create_engine(postgres_cluster.url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": ROLE}).first()
            if not exists:
                conn.execute(text(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'"))
            hba = postgres_cluster.data / "pg_hba.conf"
            lines = hba.read_text()
            if _HBA not in lines:
                hba.write_text(_HBA + lines)
            conn.execute(text("SELECT pg_reload_conf()"))
    finally:
        admin.dispose()
    role = PasswordRole(postgres_cluster.port)
    _await_password_check(role.url("not-the-password"))
    return role


def _await_password_check(wrong: str, within: float = 10.0) -> None:
    """The reload is asynchronous: wait (bounded) until a wrong password is refused."""
    deadline = time.monotonic() + within
    while True:
        engine = create_engine(wrong, poolclass=NullPool)
        try:
            with engine.connect():
                pass
        except OperationalError:
            return
        finally:
            engine.dispose()
        if time.monotonic() > deadline:
            pytest.fail(f"pg_hba.conf reload did not take effect within {within:g} s")
        time.sleep(0.05)
