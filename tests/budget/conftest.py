"""A store holding the scenarios of :mod:`tests.budget.scenarios`, on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.slo.slices import EventSlice
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import slices_op
from tests.budget import scenarios as sc
from tests.support.postgres import fresh_database, postgres_cluster, postgres_url  # noqa: F401  (fixtures)


def scenario_slices() -> list[EventSlice]:
    out = []
    for cls in sc.STORED:
        for k in range(1, sc.INTERVALS + 1):
            end = k * sc.STEP
            good = sc.VALID_PER_STEP - sc.bad_per_step(cls, k)
            out.append(
                EventSlice(f"{cls}/avail", "pool", "probe:chat", end, end, good, sc.VALID_PER_STEP, "probes")
            )
    return out


@pytest.fixture(scope="package", params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated database holding both scenarios."""
    if request.param == "sqlite":
        path: Path = tmp_path_factory.mktemp("budget") / "m3mon.db"
        url = f"sqlite:///{path}"
        yield from _filled(url)
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        yield from _filled(url)


def _filled(url: str) -> Iterator[str]:
    upgrade(url)
    store = Store(url)
    try:
        store.apply([slices_op(scenario_slices())])
    finally:
        store.close()
    yield url
