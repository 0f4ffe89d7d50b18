"""Store fixtures: every store test runs on SQLite and on a throwaway PostgreSQL cluster."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from monitor.model import Model, load_model
from monitor.store import Store
from monitor.store.migrate import upgrade
from tests.support.postgres import postgres_cluster, postgres_url  # noqa: F401  (fixtures)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"


@pytest.fixture(scope="session")
def model() -> Model:
    return load_model(EXAMPLE)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL of each dialect."""
    if request.param == "sqlite":
        (tmp_path / "db").mkdir()
        yield f"sqlite:///{tmp_path / 'db' / 'm3mon.db'}"
        return
    base = request.getfixturevalue("postgres_url")
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield base.rsplit("/", 1)[0] + f"/{name}"
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    upgrade(db_url)
    s = Store(db_url)
    try:
        yield s
    finally:
        s.close()
