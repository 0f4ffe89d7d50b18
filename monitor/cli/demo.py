"""``m3mon demo``: run the whole monitor against simulators and tell one incident's story."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from monitor.demo import DEFAULT_HISTORY_DAYS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help="run the monitor on simulators + SQLite through a healthy period, an incident and recovery",
        description="Start one simulator per endpoint of the example config, run the service against them "
        "with SQLite, inject a brown-out on the interactive pool, recover, then print SLO status per class, "
        "the burn alerts that fired and where latency went, and write config, database, generated rules, "
        "dashboards and the weekly report into the output folder. An output folder that exists is kept: "
        "the demo refuses it unless --replace is given. --serve starts the simulators of an earlier "
        "demo's output again, on the ports its demo-config.yaml names, for m3mon run -c that file.",
    )
    p.add_argument("--config", type=Path, default=EXAMPLE, help="example config to derive the demo from")
    p.add_argument("--out", type=Path, default=Path("demo-out"), help="output folder (default demo-out)")
    p.add_argument("--replace", action="store_true", help="delete an existing output folder and write anew")
    p.add_argument("--serve", action="store_true", help="serve the simulators of the demo in --out until "
                   "Ctrl-C (for m3mon run -c OUT/demo-config.yaml), instead of running the demo")  # fmt: skip
    p.add_argument("--scale", type=float, default=1.0, help="multiply every phase's length (e.g. 0.3)")
    p.add_argument("--history", type=float, default=DEFAULT_HISTORY_DAYS, metavar="DAYS",
                   help="days of generated history before the live phases (0: none; default 14)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from monitor.errors import UsageError

    out: Path = args.out.resolve()
    if args.serve:
        from monitor.demo.serve import serve_demo

        serve_demo(out)
        return 0
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not args.replace:
        raise UsageError(f"{args.out} holds earlier output, kept; pass --replace to overwrite it, "
                         "or --out to write elsewhere")  # fmt: skip
    from monitor.demo.story import run_demo

    run_demo(args.config, out, args.scale, args.history)
    return 0
