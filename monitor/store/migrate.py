"""Running the Alembic migrations programmatically (``m3mon db upgrade`` / ``m3mon db current``).

The Alembic environment lives in the repository's top-level ``migrations/`` folder and is found
relative to this package (``<checkout>/migrations``), so the commands work from any directory for
a source or editable install. ``M3MON_MIGRATIONS`` overrides the location.
"""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from monitor.errors import StoreError
from monitor.store.engine import make_engine, normalize_url


def migrations_dir() -> Path:
    """The Alembic environment folder (``env.py`` and ``versions/``)."""
    override = os.environ.get("M3MON_MIGRATIONS")
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "migrations"
    if not (path / "env.py").is_file():
        raise StoreError(f"Alembic migrations not found at {path} (set M3MON_MIGRATIONS to the folder)")
    return path


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", normalize_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` up to ``revision``."""
    command.upgrade(alembic_config(url), revision)


def current(url: str) -> str | None:
    """The revision the database is at (None when never migrated)."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def head() -> str | None:
    """The newest revision shipped."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
