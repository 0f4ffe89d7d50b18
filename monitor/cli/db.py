"""``m3mon db upgrade|current -c FILE``: run or inspect the store's Alembic migrations."""

from __future__ import annotations

import argparse
from typing import Any

from monitor.model import load_model


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "db",
        help="create or upgrade the store's tables (Alembic migrations)",
        description="Run the store's migrations against storage.url of the configuration.",
    )
    actions = p.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = actions.add_parser("upgrade", help="apply every pending migration (or up to --revision)")
    up.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    up.add_argument("--revision", default="head", help="target revision (default: head)")
    up.set_defaults(func=run_upgrade)
    cur = actions.add_parser("current", help="print the revision the database is at")
    cur.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    cur.set_defaults(func=run_current)


def run_upgrade(args: argparse.Namespace) -> int:
    """Failures (database unreachable, a migration error) are one line (:mod:`monitor.cli.failures`)."""
    from monitor.store.engine import display_url
    from monitor.store.migrate import current, upgrade

    url = load_model(args.config).storage.url
    upgrade(url, args.revision)
    print(f"{display_url(url)}: at revision {current(url)}")
    return 0


def run_current(args: argparse.Namespace) -> int:
    from monitor.store.engine import display_url
    from monitor.store.migrate import current, head

    url = load_model(args.config).storage.url
    shown = display_url(url)
    rev = current(url)
    latest = head()
    if rev is None:
        print(f"{shown}: not migrated (run `m3mon db upgrade -c {args.config}`); newest is {latest}")
        return 1
    print(f"{shown}: {rev}{' (head)' if rev == latest else f' (newest is {latest})'}")
    return 0 if rev == latest else 1
