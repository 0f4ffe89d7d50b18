"""The ``m3mon`` command line.

Each sub-command lives in its own module under :mod:`monitor.cli` and exposes
``register(subparsers)``; the module names are listed once in :data:`COMMANDS`. Heavy imports
happen inside each command's handler, so ``m3mon --help`` stays fast.

Exit status: 0 success, 1 a check failed (e.g. a probe failed), 2 bad usage or bad config.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from monitor import __version__
from monitor.errors import ConfigError, M3MonError

#: Sub-command modules, in the order ``m3mon --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "check_config",
    "run",
    "sim",
    "scrape",
    "probe",
    "db",
    "slo",
    "generate",
    "report",
    "demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="m3mon",
        description="Observability and SLOs for MiniMax M3 endpoints served by vLLM or SGLang.",
    )
    parser.add_argument("--version", action="version", version=f"m3mon {__version__}")
    parser.add_argument(
        "--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log verbosity"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"monitor.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"m3mon: configuration error\n{exc}", file=sys.stderr)
        return 2
    except M3MonError as exc:
        print(f"m3mon: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
