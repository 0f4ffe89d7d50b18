"""A write path that never stalls: bad ops are dead-lettered, only an away database spools.

Everything runs against real databases: SQLite files and the throwaway PostgreSQL cluster. The
poison inputs are the ones found in the field: an Alertmanager fingerprint of 65 characters
(``String(64)``), a span ``request_id`` of 201 characters (``String(200)``) or with a NUL byte, a
probe ``finish_reason`` of 41 characters (``String(40)``). PostgreSQL rejects them; SQLite, which
does not enforce lengths, stores them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, select, text
from sqlalchemy.pool import NullPool

from monitor.model import Model
from monitor.slo.due import evaluate_due
from monitor.store import BufferedWriter, Store, StoreMetrics
from monitor.store.failures import cannot_connect, database_away, dead_letter_reason, describe, store_error
from monitor.store.migrate import upgrade
from monitor.store.ops import Op, alertmanager_op, probe_op, spans_op
from monitor.store.tables import IncidentRow, ProbeResultRow, ServerSpanRow
from monitor.traces.span import ServerSpan
from tests.store.helpers import T0, probe
from tests.support.postgres_auth import PasswordRole, pg_password_role  # noqa: F401  (fixture)

INCIDENT = {"fingerprint": "ok", "startsAt": "2026-01-01T00:00:00Z", "status": "firing", "labels": {}}


def _incident(**fields: Any) -> Op:
    return alertmanager_op({"alerts": [{**INCIDENT, **fields}]}, T0)


def _incident_row(**columns: Any) -> Op:
    """An incidents op with raw column values (as no webhook parser would build them)."""
    return {"op": "incidents", "rows": [{**_incident()["rows"][0], **columns}]}


def _span(request_id: str) -> Op:
    return spans_op([ServerSpan("a" * 32, "b" * 16, "llm_request", T0, T0 + 2, request_id=request_id)])


#: The field's poison inputs: name -> op builder.
POISON: dict[str, Callable[[Model], Op]] = {
    "fingerprint of 65 characters": lambda m: _incident(fingerprint="f" * 65),
    "request_id of 201 characters": lambda m: _span("r" * 201),
    "request_id with a NUL byte": lambda m: _span("req\x00id"),
    "finish_reason of 41 characters": lambda m: probe_op(m, replace(probe(T0 + 900), finish_reason="x" * 41)),
}


def _started(store: Store) -> list[float]:
    with store.session() as s:
        return list(s.scalars(select(ProbeResultRow.started_at).order_by(ProbeResultRow.id)))


def _dead(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _count(store: Store, table: Any) -> int:
    with store.session() as s:
        return len(list(s.scalars(select(table.id))))


def test_poison_inputs_never_stall_the_store(store: Store, model: Model, tmp_path: Path) -> None:
    registry = CollectorRegistry()
    writer = BufferedWriter(store, tmp_path / "spool", metrics=StoreMetrics(registry))
    postgres = store.url.startswith("postgresql")
    stalls = 0
    for i, build in enumerate(POISON.values()):
        assert writer.submit(build(model)) is not postgres
        stalls += writer.backlog > 0 or not writer.submit(probe_op(model, probe(T0 + i)))
    assert stalls == 0 and writer.backlog == 0 and not writer.database_away
    assert [t for t in _started(store) if t < T0 + 100] == [T0 + i for i in range(4)]  # every good op
    letters = _dead(writer.dead_letter_file)
    samples = {
        r: registry.get_sample_value("m3mon_store_dead_letters_total", {"reason": r})
        for r in ("data_error", "other")
    }
    if not postgres:  # SQLite does not enforce lengths: every poison op is simply stored
        assert (letters, samples) == ([], {"data_error": 0, "other": 0})
        assert _count(store, IncidentRow) == 1 and _count(store, ServerSpanRow) == 1  # span ids repeat
        return
    assert writer.dead_letters == 4 and samples == {"data_error": 4, "other": 0}
    assert [(r["reason"], r["sqlstate"]) for r in letters] == [
        ("data_error", "22001"), ("data_error", "22001"), ("data_error", None), ("data_error", "22001")
    ]  # fmt: skip
    assert letters[0]["message"] == "value too long for type character varying(64)"
    assert letters[0]["error"] == "sqlalchemy.exc.DataError"
    assert letters[0]["op"]["rows"][0]["fingerprint"] == "f" * 65
    assert letters[2]["op"]["rows"][0]["request_id"] == "req\x00id"
    assert letters[3]["op"]["row"]["finish_reason"] == "x" * 41
    assert _count(store, IncidentRow) == 0 and _count(store, ServerSpanRow) == 0


def test_evaluation_proceeds_after_poison(store: Store, model: Model, tmp_path: Path) -> None:
    writer = BufferedWriter(store, tmp_path / "spool")
    for i, build in enumerate(POISON.values()):
        writer.submit(build(model))
        writer.submit(probe_op(model, probe(T0 + 60 * i, reason="timeout" if i == 1 else None)))
    now = writer.complete_until(T0 + 600)
    assert now == T0 + 600
    done = evaluate_due(store, model, now)
    (ev,) = [e for e in done if e.slo_id == "interactive-32k/availability"]
    assert ev.evaluated_at == T0 + 600
    assert (ev.window("1h").good, ev.window("1h").total) == (3, 4)  # type: ignore[union-attr]


def _poisons(url: str, model: Model) -> list[Op]:
    if url.startswith("postgresql"):
        return [POISON["fingerprint of 65 characters"](model), POISON["request_id with a NUL byte"](model)]
    return [_incident_row(status=None), {"op": "no such op"}]


def _dead_store(url: str, tmp_path: Path) -> Store:
    if url.startswith("postgresql"):
        return Store("postgresql+psycopg://postgres@127.0.0.1:1/postgres")
    return Store(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")


def test_a_poisoned_batch_sets_aside_only_the_bad_ops(store: Store, model: Model, tmp_path: Path) -> None:
    """Ops spooled during an outage are replayed in batches of 3; a batch with a bad op is retried
    op by op, so the good ops around it are stored in order and only the bad ones set aside."""
    bad = _poisons(store.url, model)
    good = [probe_op(model, probe(T0 + i)) for i in range(5)]
    ops = [good[0], bad[0], good[1], good[2], good[3], bad[1], good[4]]
    dead = _dead_store(store.url, tmp_path)
    first = BufferedWriter(dead, tmp_path / "spool", max_items=3)
    for op in ops:
        assert not first.submit(op)
    assert (first.backlog, first.dead_letters, first.database_away) == (7, 0, True)
    assert first.flush() == 0 and first.backlog == 7
    dead.close()
    registry = CollectorRegistry()
    second = BufferedWriter(store, tmp_path / "spool", max_items=3, metrics=StoreMetrics(registry))
    assert second.backlog == 7
    assert second.flush() == 5
    assert (second.backlog, second.dead_letters, second.database_away) == (0, 2, False)
    assert not (tmp_path / "spool" / "spool.jsonl").exists()
    assert _started(store) == [T0 + i for i in range(5)]
    letters = _dead(second.dead_letter_file)
    assert [r["op"] for r in letters] == json.loads(json.dumps(bad))
    reasons = (
        ["data_error", "data_error"]
        if store.url.startswith("postgresql")
        else ["integrity_error", "invalid_op"]
    )
    assert [r["reason"] for r in letters] == reasons
    assert (
        sum(
            registry.get_sample_value("m3mon_store_dead_letters_total", {"reason": r}) or 0
            for r in set(reasons)
        )
        == 2
    )


def test_unreadable_and_torn_spool_lines_are_set_aside(model: Model, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm3mon.db'}"
    upgrade(url)
    store = Store(url)
    spool = tmp_path / "spool"
    spool.mkdir()
    line = json.dumps(probe_op(model, probe(T0)))
    (spool / "spool.jsonl").write_text(f"{line}\nnot json at all\n{line[:40]}")  # a torn last line
    dead = _dead_store(url, tmp_path)
    first = BufferedWriter(dead, spool)
    assert first.backlog == 3
    first.submit(probe_op(model, probe(T0 + 1)))  # queued behind: the torn line is terminated first
    assert first.backlog == 4 and len((spool / "spool.jsonl").read_text().splitlines()) == 4
    second = BufferedWriter(store, spool, max_items=10)
    assert second.flush() == 2 and second.backlog == 0
    assert _started(store) == [T0, T0 + 1]
    letters = _dead(second.dead_letter_file)
    assert [(r["reason"], r["op"]["line"]) for r in letters] == [
        ("invalid_op", "not json at all\n"), ("invalid_op", line[:40] + "\n")
    ]  # fmt: skip
    store.close()


def test_evaluation_need_not_wait_for_an_unrelated_backlog(model: Model, tmp_path: Path) -> None:
    """Only steps at or after the oldest queued event wait; ops without events never hold it up."""
    url = f"sqlite:///{tmp_path / 'm3mon.db'}"
    upgrade(url)
    store, dead = Store(url), _dead_store(url, tmp_path)
    store.apply([probe_op(model, probe(T0))])
    first = BufferedWriter(dead, tmp_path / "spool")
    first.submit(_incident())
    assert first.backlog == 1 and first.oldest_pending_event_time() is None
    assert first.complete_until(T0 + 3600) == T0 + 3600
    late = probe(T0 + 1200)
    first.submit(probe_op(model, late))
    assert first.oldest_pending_event_time() == late.completed_at
    second = BufferedWriter(store, tmp_path / "spool")  # e.g. after a restart, before its first flush
    now = second.complete_until(T0 + 3600)
    assert T0 + 1200 < now < late.completed_at
    evaluate_due(store, model, now)
    assert store.last_evaluated_at("interactive-32k/availability") == 1_767_226_800.0  # T0 + 1200, a step
    assert second.flush() == 2 and second.complete_until(T0 + 3600) == T0 + 3600
    store.close()


# --- classification of real failures ---------------------------------------------------------


def _raised(fn: Callable[[], object]) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def _verdict(exc: BaseException) -> tuple[bool, bool, str]:
    return database_away(exc), cannot_connect(exc), dead_letter_reason(exc)


def test_sqlite_failures_are_classified(model: Model, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db' / 'm3mon.db'}"
    (tmp_path / "db").mkdir()
    upgrade(url)
    store = Store(url)
    not_null = _raised(lambda: store.apply([_incident_row(status=None)]))
    binding = _raised(lambda: store.apply([_incident_row(fingerprint={"a": 1})]))
    malformed = _raised(lambda: store.apply([{"op": "no such op"}]))
    holder = sqlite3.connect(tmp_path / "db" / "m3mon.db")
    holder.execute("BEGIN EXCLUSIVE")
    impatient = create_engine(url, poolclass=NullPool, connect_args={"timeout": 0})
    with impatient.connect() as conn:
        locked = _raised(lambda: conn.execute(text("INSERT INTO store_meta VALUES ('k', 1)")))
    holder.rollback()
    holder.close()
    (tmp_path / "db").rename(tmp_path / "away")
    vanished_dir = _raised(lambda: store.apply([_incident()]))
    (tmp_path / "away").rename(tmp_path / "db")
    (tmp_path / "db" / "m3mon.db").unlink()  # deleted: the next connection opens an empty file
    vanished_file = _raised(lambda: store.apply([_incident()]))
    assert _verdict(not_null) == (False, False, "integrity_error")
    assert _verdict(binding) == (False, False, "data_error")
    assert _verdict(malformed) == (False, False, "invalid_op")
    assert _verdict(locked)[:2] == (True, False) and describe(locked) == "database is locked"
    assert (
        _verdict(vanished_dir)[:2] == (True, True)
        and describe(vanished_dir) == "unable to open database file"
    )
    assert _verdict(vanished_file)[:2] == (True, False) and "no such table" in describe(vanished_file)
    assert str(store_error(vanished_dir)) == f"database unreachable: {url} (unable to open database file)"
    store.close()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_postgresql_failures_are_classified(
    store: Store, model: Model, request: pytest.FixtureRequest
) -> None:
    role: PasswordRole = request.getfixturevalue("pg_password_role")
    fp65 = _raised(lambda: store.apply([POISON["fingerprint of 65 characters"](model)]))
    nul = _raised(lambda: store.apply([POISON["request_id with a NUL byte"](model)]))
    not_null = _raised(lambda: store.apply([_incident_row(status=None)]))
    binding = _raised(lambda: store.apply([_incident_row(fingerprint={"a": 1})]))
    for exc, reason in (
        (fp65, "data_error"),
        (nul, "data_error"),
        (not_null, "integrity_error"),
        (binding, "data_error"),
    ):
        assert _verdict(exc) == (False, False, reason), exc
    away = {
        "refused": Store("postgresql+psycopg://m3mon_pw:pw@127.0.0.1:1/postgres"),
        "wrong password": Store(role.url("wrong-password")),
        "no such database": Store(role.url(database="no_such_db")),
    }
    errors = {name: _raised(lambda s=s: s.apply([_incident()])) for name, s in away.items()}  # type: ignore[misc]
    for s in away.values():
        s.close()
    assert {n: _verdict(e)[:2] for n, e in errors.items()} == dict.fromkeys(away, (True, True))
    assert describe(errors["refused"]) == "connection refused"
    assert describe(errors["wrong password"]) == 'password authentication failed for user "m3mon_pw"'
    assert "wrong-password" not in str(store_error(errors["wrong password"]))
    assert str(store_error(errors["wrong password"])).startswith(
        "database unreachable: postgresql+psycopg://m3mon_pw:***@"
    )
    _assert_server_side_away(store)


def _assert_server_side_away(store: Store) -> None:
    """A backend killed mid-session, a read-only database and a missing table: the database, not the op."""
    admin = create_engine(store.url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with store.engine.connect() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
            with admin.connect() as a:
                a.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            killed = _raised(lambda: conn.execute(text("SELECT 1")))
        with store.engine.connect() as conn:
            conn.execute(text("SET default_transaction_read_only = on"))
            conn.commit()
            read_only = _raised(lambda: conn.execute(text("INSERT INTO store_meta VALUES ('k', 1)")))
            conn.rollback()
            conn.execute(text("SET default_transaction_read_only = off"))
        with admin.connect() as a:
            a.execute(text("ALTER TABLE incidents RENAME TO incidents_moved"))
            missing = _raised(lambda: store.apply([_incident()]))
            a.execute(text("ALTER TABLE incidents_moved RENAME TO incidents"))
    finally:
        admin.dispose()
    assert _verdict(killed)[:2] == (True, True)
    assert _verdict(read_only)[:2] == (True, False)
    assert describe(read_only) == "cannot execute INSERT in a read-only transaction"
    assert (
        _verdict(missing)[:2] == (True, False) and describe(missing) == 'relation "incidents" does not exist'
    )
