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
        "dashboards and the weekly report into the output folder.",
    )
    p.add_argument("--config", type=Path, default=EXAMPLE, help="example config to derive the demo from")
    p.add_argument("--out", type=Path, default=Path("demo-out"), help="output folder (replaced)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every phase's length (e.g. 0.3)")
    p.add_argument("--history", type=float, default=DEFAULT_HISTORY_DAYS, metavar="DAYS",
                   help="days of generated history before the live phases (0: none; default 14)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from monitor.demo.story import run_demo

    run_demo(args.config, args.out.resolve(), args.scale, args.history)
    return 0
