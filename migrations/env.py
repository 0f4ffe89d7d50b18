"""Alembic environment for the m3mon store.

Run through ``m3mon db upgrade -c CONFIG`` (which sets the URL), or with the Alembic CLI from
the repository root: ``M3MON_DB_URL=sqlite:///m3mon.db alembic upgrade head``. New revisions:
``M3MON_DB_URL=... alembic revision --autogenerate -m "what changed"``.
"""

from __future__ import annotations

import os

from alembic import context

from monitor.store.engine import make_engine
from monitor.store.tables import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url") or os.environ.get("M3MON_DB_URL")
    if not url:
        raise SystemExit("no database URL: use `m3mon db upgrade -c CONFIG` or set M3MON_DB_URL")
    return url


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = make_engine(_url())
    try:
        with engine.connect() as connection:
            context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
