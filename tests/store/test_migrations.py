"""The Alembic migrations and the ORM models describe the same schema, on both dialects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from monitor.cli import main
from monitor.store.engine import make_engine
from monitor.store.migrate import current, head, upgrade
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
    assert current(db_url) == head() == "0009"


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
    assert "0009 (head)" in capsys.readouterr().out
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
