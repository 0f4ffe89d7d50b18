"""``m3mon profile -c FILE --class C --since 7d [-o profile.yaml]``: learn a class's traffic profile.

Reads the store (scrape intervals, probe runs) over the window ending now (or ``--at``) and
prints the profile as YAML (``m3mon-profile/v1``), or writes it to ``-o``. How each field is
learned: docs/contract.md (and :mod:`monitor.replay.learn`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "profile",
        help="learn a request class's traffic profile from the store",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    p.add_argument("--class", dest="request_class", required=True, metavar="C", help="request class")
    p.add_argument("--since", default="7d", metavar="D", help="window length ending at --at (default 7d)")
    p.add_argument("--at", metavar="TIME", help="end of the window: ISO 8601 or Unix seconds (default now)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the profile here instead of stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from monitor.cli.contract import class_and_endpoint
    from monitor.cli.slo import parse_time
    from monitor.config import parse_duration
    from monitor.errors import M3MonError, UsageError
    from monitor.model import load_model
    from monitor.replay.learn import learn, observe
    from monitor.store.store import Store

    model = load_model(args.config)
    class_and_endpoint(model, args.request_class, None)
    try:
        window = parse_duration(args.since)
    except ValueError as exc:
        raise UsageError(f"--since: {exc}") from None
    end = parse_time(args.at)
    db = Store(model.storage.url)
    try:
        db.check_schema()
        with db.session() as s:
            obs = observe(s, model, args.request_class, end - window, end)
    finally:
        db.close()
    try:
        profile = learn(obs, args.request_class, args.since)
    except ValueError as exc:
        raise M3MonError(f"--class {args.request_class}: {exc}") from None
    head = f"# m3mon profile -c {args.config} --class {args.request_class} --since {args.since}"
    text = f"{head}\n{profile.to_yaml()}"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output} (digest {profile.digest[:12]})")
    else:
        print(text, end="")
    return 0
