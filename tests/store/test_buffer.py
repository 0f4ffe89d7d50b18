"""Nothing lost: writes survive a database outage and a process restart, in order, once each."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from monitor.model import Model
from monitor.store import BufferedWriter, Store, StoreMetrics
from monitor.store.migrate import upgrade
from monitor.store.ops import probe_op
from monitor.store.tables import ProbeResultRow
from tests.store.helpers import T0, probe
from tests.support.postgres import PostgresCluster


def _started(store: Store) -> list[float]:
    with store.session() as s:
        return list(s.scalars(select(ProbeResultRow.started_at).order_by(ProbeResultRow.id)))


def _outage(url: str, request: pytest.FixtureRequest) -> tuple[object, object]:
    """(take_down, bring_back) for the database behind ``url``."""
    if url.startswith("sqlite"):
        db_dir = Path(url.removeprefix("sqlite:///")).parent
        away = db_dir.with_name("away")
        return (lambda: db_dir.rename(away)), (lambda: away.rename(db_dir))
    cluster: PostgresCluster = request.getfixturevalue("postgres_cluster")
    return cluster.stop, cluster.start


def test_outage_buffers_spools_and_replays_in_order(
    store: Store, model: Model, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    registry = CollectorRegistry()
    writer = BufferedWriter(store, tmp_path / "spool", max_items=2, metrics=StoreMetrics(registry))
    take_down, bring_back = _outage(store.url, request)
    assert writer.submit(probe_op(model, probe(T0)))
    take_down()  # type: ignore[operator]
    try:
        for i in range(1, 6):
            assert not writer.submit(probe_op(model, probe(T0 + i)))
        assert writer.backlog == 5
        assert registry.get_sample_value("m3mon_store_backlog_items") == 5
        assert (registry.get_sample_value("m3mon_store_write_errors_total") or 0) >= 1
        assert len((tmp_path / "spool" / "spool.jsonl").read_text().splitlines()) == 5
        assert writer.flush() == 0 and writer.backlog == 5
    finally:
        bring_back()  # type: ignore[operator]
    assert writer.flush() == 5
    assert writer.backlog == 0 and not (tmp_path / "spool" / "spool.jsonl").exists()
    assert writer.submit(probe_op(model, probe(T0 + 6)))
    assert _started(store) == [T0 + i for i in range(7)]


def test_restart_replays_the_spool_without_duplicates(store: Store, model: Model, tmp_path: Path) -> None:
    dead = Store(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    first = BufferedWriter(dead, tmp_path / "spool", max_items=100)
    ops = [probe_op(model, probe(T0 + i)) for i in range(4)]
    for op in ops:
        first.submit(op)
    assert first.backlog == 4
    dead.close()
    store.apply(ops[:2])  # as if a crash happened after a batch committed, before the offset was saved
    second = BufferedWriter(store, tmp_path / "spool", max_items=3)
    assert second.backlog == 4
    assert second.flush() == 4
    assert _started(store) == [T0 + i for i in range(4)]


def test_upgrade_needed_is_reported(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    s = Store(url)
    try:
        with pytest.raises(Exception, match="m3mon db upgrade"):
            s.check_schema()
        upgrade(url)
        s.check_schema()
    finally:
        s.close()
