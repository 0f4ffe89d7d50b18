"""Every failure of an ``m3mon`` command as one line: what failed, why, and the exit status::

    m3mon slo status: database unreachable: postgresql+psycopg://m3mon:***@db:5432/m3mon (connection refused)

Exit status 2: bad input (a command-line value, the configuration file, a database URL that does
not parse or names an unknown driver). Exit status 1: a check or an operation failed (database
unreachable, a failed migration, a scrape, a delivery), or m3mon itself failed (``internal
error``; the traceback is logged at ``--log-level DEBUG``). A configuration error keeps its
documented form: a header line, then one line per problem. Passwords never appear: every message
goes through :mod:`monitor.redact`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, NoReturn

from monitor.errors import ConfigError, M3MonError, UsageError
from monitor.redact import one_line, redact

if TYPE_CHECKING:
    from monitor.model import Endpoint

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C)


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line: ``m3mon slo status: the following arguments are
    required: -c/--config (see m3mon slo status --help)``, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def warn_unset_keys(who: str, endpoints: Iterable[Endpoint]) -> None:
    """One ``m3mon probe: warning: endpoint E: api_key_env V is not set ...`` line on stderr per
    endpoint a command is about to contact without the key its config names (check-config prints
    the same warning, ``m3mon run`` logs it: :meth:`monitor.model.Endpoint.key_unset`)."""
    for e in endpoints:
        problem = e.key_unset()
        if problem is not None:
            print(f"{who}: warning: {problem}", file=sys.stderr)


def command_name(args: argparse.Namespace) -> str:
    """``m3mon slo status``: the program, the command and its action, if any."""
    command = getattr(args, "command", None)
    action = getattr(args, f"{command}_command", None) if command else None
    return " ".join(str(p) for p in ("m3mon", command, action) if p)


def _os_error(exc: OSError) -> str:
    what = exc.strerror or type(exc).__name__
    return one_line(f"{exc.filename}: {what}" if exc.filename else f"{what} ({exc})")


def _database_failure(exc: BaseException) -> tuple[str, int]:
    from sqlalchemy import exc as sa  # imported on failure only: ``m3mon --help`` stays fast

    from monitor.store.failures import store_error

    if isinstance(exc, sa.ArgumentError | sa.NoSuchModuleError):
        return f"bad database URL: {one_line(str(exc))}", EXIT_USAGE
    return one_line(str(store_error(exc))), EXIT_FAILED


def failure(exc: BaseException) -> tuple[str, int]:
    """``(message, exit status)`` for the exception that ended a command; the message is one line,
    except a configuration error's problem list."""
    if isinstance(exc, ConfigError):
        return "configuration error\n" + redact(str(exc)), EXIT_USAGE
    if isinstance(exc, UsageError):
        return one_line(str(exc)), EXIT_USAGE
    if isinstance(exc, M3MonError):
        return one_line(str(exc)), EXIT_FAILED
    if type(exc).__module__.startswith("sqlalchemy."):
        return _database_failure(exc)
    if isinstance(exc, OSError):
        return _os_error(exc), EXIT_FAILED
    detail = one_line(str(exc).split("\n", 1)[0]) or "no detail"
    return (
        f"internal error: {type(exc).__name__}: {detail} (the traceback is logged with --log-level DEBUG)",
        EXIT_FAILED,
    )
