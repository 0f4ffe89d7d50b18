"""Store fixtures: every store test runs on SQLite and on a throwaway PostgreSQL cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.model import Model, load_model
from monitor.store import Store
from monitor.store.migrate import upgrade
from tests.support.postgres import fresh_database, postgres_cluster, postgres_url  # noqa: F401  (fixtures)

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
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        yield url


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    upgrade(db_url)
    s = Store(db_url)
    try:
        yield s
    finally:
        s.close()
