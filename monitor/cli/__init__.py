"""The ``m3mon`` command line.

Each sub-command lives in its own module under :mod:`monitor.cli` and exposes
``register(subparsers)``; the module names are listed once in :data:`COMMANDS`. Heavy imports
happen inside each command's handler, so ``m3mon --help`` stays fast.

Exit status: 0 success, 1 a check or operation failed (e.g. a probe failed, the database is
unreachable), 2 bad usage, a bad command-line value or a bad config. Every failure is one line on
stderr naming what failed (:mod:`monitor.cli.failures`), and nothing a command prints or logs
shows a password (:mod:`monitor.redact`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from monitor import __version__, redact
from monitor.cli.failures import EXIT_INTERRUPTED, Parser, command_name, failure
from monitor.errors import ConfigError
from monitor.model import STORAGE_URL_ENV

log = logging.getLogger("monitor.cli")

#: Sub-command modules, in the order ``m3mon --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "init",
    "check_config",
    "run",
    "sim",
    "scrape",
    "probe",
    "db",
    "slo",
    "traces",
    "generate",
    "report",
    "demo",
    "openslo",
    "budget",
    "fleet",
    "profile",
    "replay",
    "contract",
    "compare",
    "maintenance",
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    redact.remember_url(os.environ.get(STORAGE_URL_ENV))
    with redact.redacted_output():
        parser = build_parser()
        args = parser.parse_args(argv)
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        redact.protect_logging()
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Run the command; a failure becomes one line on stderr and an exit status."""
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:
        message, status = failure(exc)
        who = "m3mon" if isinstance(exc, ConfigError) else command_name(args)
        log.debug("%s failed", who, exc_info=exc)
        print(f"{who}: {message}", file=sys.stderr)
        return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
