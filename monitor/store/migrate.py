"""Running the Alembic migrations programmatically (``m3mon db upgrade`` / ``m3mon db current``).

The Alembic environment lives in the repository's top-level ``migrations/`` folder. It is found
relative to this package for a source or editable install (``<checkout>/migrations``), and under
``<prefix>/share/m3-monitor/migrations`` for a wheel install (the wheel ships it as data files;
this is how the Docker image has it). ``M3MON_MIGRATIONS`` overrides both.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from monitor.errors import StoreError
from monitor.store.engine import make_engine, normalize_url, sqlite_file

#: Where a wheel install puts the Alembic environment, below an installation prefix.
INSTALLED = Path("share", "m3-monitor", "migrations")


def _candidates() -> list[Path]:
    override = os.environ.get("M3MON_MIGRATIONS")
    if override:
        return [Path(override)]
    prefixes = [sys.prefix, sysconfig.get_path("data"), site.USER_BASE or ""]
    return [Path(__file__).resolve().parents[2] / "migrations", *(Path(p) / INSTALLED for p in prefixes if p)]


def migrations_dir() -> Path:
    """The Alembic environment folder (``env.py`` and ``versions/``)."""
    tried = _candidates()
    for path in tried:
        if (path / "env.py").is_file():
            return path
    where = ", ".join(str(p) for p in dict.fromkeys(tried))
    raise StoreError(f"Alembic migrations not found (looked in {where}); set M3MON_MIGRATIONS to the folder")


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", normalize_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` up to ``revision``."""
    command.upgrade(alembic_config(url), revision)


def current(url: str) -> str | None:
    """The revision the database is at (None when never migrated; a SQLite file that does not
    exist is not created)."""
    path = sqlite_file(url)
    if path is not None and not os.path.exists(path):
        return None
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def head() -> str | None:
    """The newest revision shipped."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
