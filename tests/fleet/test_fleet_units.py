"""Fleet pieces without a fleet: slot collapse in the store, claims, SQLite refusal, `fleet plan`.

Expected values come from the definitions in docs/fleet.md (one row and one set of events per
slot identity, on SQLite and on PostgreSQL; the first claim wins; no database → the claim is
"unavailable" and the round probes everything; Prometheus' hashmod in tests/fleet/stack.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from monitor.cli import main
from monitor.errors import ConfigError, UsageError
from monitor.fleet.claims import claim
from monitor.fleet.role import fleet_role
from monitor.fleet.shard import Shard
from monitor.model import load_model
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import probe_op, signals_op
from monitor.store.tables import EventSliceRow, ProbeResultRow, ScrapeIntervalRow
from tests.fleet.stack import fresh_database, prometheus_shard
from tests.store.helpers import probe, signals
from tests.support.prometheus import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "monitor.yaml"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    url = f"sqlite:///{tmp_path / 'm3mon.db'}"
    upgrade(url)
    return Store(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def both_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated empty store on SQLite and on PostgreSQL (the fleet's store: its conflict path)."""
    if request.param == "sqlite":
        yield _migrated(f"sqlite:///{tmp_path / 'm3mon.db'}")
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        store = _migrated(url)
        try:
            yield store
        finally:
            store.close()


def _migrated(url: str) -> Store:
    upgrade(url)
    return Store(url)


def _count(store: Store, table: type) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(table)) or 0)


def test_a_pairs_two_writes_of_one_slot_are_one_row_with_one_set_of_events(both_stores: Store) -> None:
    store = both_stores
    model = load_model(EXAMPLE)
    a, b = probe(1_000_000.2), probe(1_000_000.9)  # the pair's runs of slot 33333 (30 s interval)
    store.apply([probe_op(model, a, 33_333), probe_op(model, b, 33_333), probe_op(model, a, 33_333)])
    assert _count(store, ProbeResultRow) == 1
    slices = _count(store, EventSliceRow)
    store.apply([probe_op(model, probe(1_000_030.1), 33_334)])
    assert _count(store, ProbeResultRow) == 2
    assert _count(store, EventSliceRow) == 2 * slices  # the next slot adds its own events once
    store.apply([signals_op(model, "m3-interactive", signals(985.0, 1000.01), 66),
                 signals_op(model, "m3-interactive", signals(985.1, 1000.05), 66)])  # fmt: skip
    assert _count(store, ScrapeIntervalRow) == 1


def test_without_slots_rows_keep_their_natural_key(store: Store) -> None:
    model = load_model(EXAMPLE)
    store.apply([probe_op(model, probe(10.0)), probe_op(model, probe(11.0)), probe_op(model, probe(10.0))])
    assert _count(store, ProbeResultRow) == 2


def test_the_first_claim_of_a_slot_wins(both_stores: Store) -> None:
    store = both_stores
    keys = [("ep0", "c", "chat", 7), ("ep1", "c", "chat", 7)]
    assert claim(store, keys[:1], "0-a", 1.0) == {keys[0]}
    assert claim(store, keys, "0-b", 1.1) == {keys[1]}
    assert claim(store, keys, "0-a", 1.2) == set()


def test_sqlite_refuses_fleet_mode_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-c", str(EXAMPLE), "--shard", "0/2", "--duration", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs PostgreSQL" in err[0] and "SQLite" in err[0]
    with pytest.raises(UsageError, match="needs PostgreSQL"):
        fleet_role(load_model(EXAMPLE), replica_flag="x")
    assert fleet_role(load_model(EXAMPLE)) is None  # no fleet flags: the single replica as before


@pytest.mark.parametrize("text", ["2/2", "1", "a/b", "-1/2"])
def test_bad_shard_values_name_the_flag(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        Shard.parse(text)


def test_fleet_shard_must_be_below_shards(tmp_path: Path) -> None:
    cfg = tmp_path / "m.yaml"
    cfg.write_text(EXAMPLE.read_text() + "fleet: {shards: 2, shard: 2}\n")
    with pytest.raises(ConfigError, match=r"fleet: .*fleet.shard must be below fleet.shards \(2\)"):
        load_model(cfg)


def test_fleet_plan_assigns_by_prometheus_hashmod(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "plan", "-c", str(EXAMPLE), "--shards", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [e.name for e in load_model(EXAMPLE).endpoints]
    assert out["assignment"] == {str(k): [n for n in names if prometheus_shard(n, 2) == k] for k in range(2)}
    sizes = [len(v) for v in out["assignment"].values()]
    assert out["balance"] == round(max(sizes) / (sum(sizes) / 2), 3)


def test_claims_without_a_database_say_unavailable(caplog: pytest.LogCaptureFixture) -> None:
    """PostgreSQL away: the claim answers None (the round then runs every probe) and says why."""
    store = Store(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/postgres")  # nothing listens
    try:
        with caplog.at_level("WARNING", logger="monitor.fleet.claims"):
            assert claim(store, [("ep0", "c", "chat", 7)], "0-a", 1.0) is None
    finally:
        store.close()
    assert "probe claims unavailable (OperationalError)" in caplog.text
