"""The Alembic migrations and the ORM models describe the same schema, on both dialects."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from monitor.cli import main
from monitor.store import Store
from monitor.store.engine import make_engine
from monitor.store.migrate import alembic_config, current, head, upgrade
from monitor.store.tables import Base


def test_models_and_migrations_agree(db_url: str) -> None:
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
            tables = set(inspect(conn).get_table_names())
    finally:
        engine.dispose()
    assert diff == []
    assert set(Base.metadata.tables) <= tables
    assert current(db_url) == head() == "0017"


def test_upgrade_is_repeatable(db_url: str) -> None:
    upgrade(db_url)
    upgrade(db_url)
    assert current(db_url) == head()


def test_cli_db_upgrade_and_current_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
    db = tmp_path / "cli.db"
    cfg = tmp_path / "m.yaml"
    cfg.write_text(example.read_text().replace("sqlite:///m3mon.db", f"sqlite:///{db}"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["db", "current", "-c", str(cfg)]) == 1  # not migrated yet
    assert "not migrated" in capsys.readouterr().out
    assert main(["db", "upgrade", "-c", str(cfg)]) == 0
    assert main(["db", "current", "-c", str(cfg)]) == 0
    assert "0017 (head)" in capsys.readouterr().out
    assert db.exists() and os.listdir(elsewhere) == []


def test_storage_url_from_the_environment_wins(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``M3MON_STORAGE_URL`` (set by compose, password included) replaces the file's ``storage.url``."""
    example = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
    in_file = tmp_path / "from-file.db"
    cfg = tmp_path / "m.yaml"
    cfg.write_text(example.read_text().replace("sqlite:///m3mon.db", f"sqlite:///{in_file}"))
    monkeypatch.setenv("M3MON_STORAGE_URL", db_url)
    assert main(["db", "upgrade", "-c", str(cfg)]) == 0
    assert current(db_url) == head()
    assert not in_file.exists()
    monkeypatch.delenv("M3MON_STORAGE_URL")
    assert main(["db", "current", "-c", str(cfg)]) == 1  # the file's database was never touched
    assert "not migrated" in capsys.readouterr().out


def test_database_passwords_are_never_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
    cfg = tmp_path / "m.yaml"
    cfg.write_text(example.read_text())
    # Nothing listens on port 9: the command fails, and its error names the database, not the secret.
    monkeypatch.setenv(
        "M3MON_STORAGE_URL", "postgresql+psycopg://m3mon:s3cr3t-pw@127.0.0.1:9/m3mon?connect_timeout=2"
    )
    assert main(["check-config", str(cfg)]) == 0
    assert main(["db", "current", "-c", str(cfg)]) != 0
    out = capsys.readouterr()
    assert "m3mon:***@127.0.0.1:9/m3mon" in out.out + out.err
    assert "s3cr3t-pw" not in out.out + out.err


#: Rows of the per-window evaluations table (0001-0008), as such a store holds them: two windows of
#: one SLO at one instant (stored shortest first), one window of another SLO that was burning.
OLD_ROWS = [
    # slo_id, class, slo, sli, window, window_start, at, objective, good, total, att, budget, burn, status, sev
    ("c/a", "c", "a", "availability", "5m", 700.0, 1000.0, 0.99, 9.0, 10.0, 0.9, -9.0, 10.0, "burning", "page"),
    ("c/a", "c", "a", "availability", "1h", -2600.0, 1000.0, 0.99, 99.0, 100.0, 0.99, 0.0, 1.0, "burning", "page"),
    ("c/b", "c", "b", "ttft", "5m", 700.0, 1000.0, 0.95, 0.0, 0.0, None, None, None, "no data", None),
]  # fmt: skip
OLD_COLUMNS = ("slo_id, request_class, slo_name, sli, \"window\", window_start, evaluated_at, objective, good, "
               "total, attainment, budget_remaining, burn_rate, status, severity")  # fmt: skip


def _old_rows(url: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return [
                tuple(r) for r in conn.execute(text(f"SELECT {OLD_COLUMNS} FROM evaluations ORDER BY id"))
            ]
    finally:
        engine.dispose()


def test_per_window_evaluations_carry_over_to_one_row_per_step_and_back(db_url: str) -> None:
    """0009 turns a store's per-window rows into one row per (SLO, instant) that reads back as the
    same evaluations; its downgrade gives the per-window rows back unchanged."""
    upgrade(db_url, "0008")
    engine = make_engine(db_url)
    marks = ", ".join(f":p{i}" for i in range(15))
    with engine.begin() as conn:
        for row in OLD_ROWS:
            conn.execute(text(f"INSERT INTO evaluations ({OLD_COLUMNS}) VALUES ({marks})"),
                         {f"p{i}": v for i, v in enumerate(row)})  # fmt: skip
    engine.dispose()
    upgrade(db_url)
    store = Store(db_url)
    try:
        got = {e.slo_id: e for e in store.latest_evaluations()}
    finally:
        store.close()
    a, b = got["c/a"], got["c/b"]
    assert (a.status, a.severity, a.objective, a.evaluated_at) == ("burning", "page", 0.99, 1000.0)
    assert [(w.window, w.start, w.end, w.good, w.total, w.burn_rate) for w in a.windows] == [
        ("5m", 700.0, 1000.0, 9.0, 10.0, 10.0),
        ("1h", -2600.0, 1000.0, 99.0, 100.0, 1.0),
    ]
    assert (b.sli, b.status, b.severity, [(w.window, w.attainment) for w in b.windows]) == (
        "ttft", "no data", None, [("5m", None)]
    )  # fmt: skip
    command.downgrade(alembic_config(db_url), "0008")
    assert _old_rows(db_url) == OLD_ROWS


#: A 0009-0016 ``windows`` list (one object per window), with numbers whose text must survive as
#: written: shortest round-trip floats, an integer, a tiny one, and no-data nulls.
LIST_WINDOWS = [
    {"window": "5m", "start": 1770683760.0, "good": 0.30000000000000004, "total": 3, "attainment": None,
     "budget_remaining": None, "burn_rate": None},
    {"window": "1h", "start": 1770680460.5, "good": 99.0, "total": 100.0, "attainment": 0.99,
     "budget_remaining": -1e-300, "burn_rate": 1.0000000000000002},
]  # fmt: skip


def _stored_windows(url: str) -> object:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return json.loads(
                conn.execute(text("SELECT CAST(windows AS TEXT) FROM evaluations")).scalar_one()
            )
    finally:
        engine.dispose()


def test_window_lists_become_columns_and_back(db_url: str) -> None:
    """0017 turns each stored row's list of window objects into one object of columns, in the
    database, each number exactly; the row reads back as the same evaluation; the downgrade
    gives the list back."""
    upgrade(db_url, "0016")
    engine = make_engine(db_url)
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO evaluations VALUES ('c/a', 1770684060.0, 'c', 'a', 'availability', 0.99, "
                 "'ok', NULL, :w)"),
            {"w": json.dumps(LIST_WINDOWS)},
        )  # fmt: skip
    engine.dispose()
    upgrade(db_url)
    assert _stored_windows(db_url) == {k: [w[k] for w in LIST_WINDOWS] for k in LIST_WINDOWS[0]}
    store = Store(db_url)
    try:
        (e,) = store.latest_evaluations()
    finally:
        store.close()
    assert [(w.window, w.start, w.end, w.good, w.total, w.attainment, w.budget_remaining, w.burn_rate)
            for w in e.windows] == [(w["window"], w["start"], 1770684060.0, w["good"], w["total"],
                                     w["attainment"], w["budget_remaining"], w["burn_rate"])
                                    for w in LIST_WINDOWS]  # fmt: skip
    command.downgrade(alembic_config(db_url), "0016")
    assert _stored_windows(db_url) == LIST_WINDOWS
