"""The documented error hierarchy of m3-monitor.

Every error the package raises on purpose derives from :class:`M3MonError`, so callers can
catch one base class. The CLI maps :class:`ConfigError` and :class:`UsageError` (bad input) to
exit status 2 and other :class:`M3MonError` subclasses (a failed check or operation) to exit
status 1, each as one line (``monitor.cli.failures``).
"""

from __future__ import annotations


class M3MonError(Exception):
    """Base class of every error m3-monitor raises on purpose."""


class ConfigError(M3MonError):
    """The configuration file is missing, unreadable, or does not validate.

    ``problems`` holds one line per problem, each naming the file, the YAML path and what was
    expected, e.g. ``monitor.yaml:12: request_classes[0].slos[1].objective: expected a number
    in (0, 100), got 120``.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class UsageError(M3MonError):
    """A command-line value is not acceptable (``--at yesterday``, ``--week 2026-W99``); exit status 2."""


class ScrapeError(M3MonError):
    """A ``/metrics`` page could not be fetched or parsed; nothing from it is used.

    ``reason`` is one of the fixed reasons in :data:`monitor.conventions.SCRAPE_ERROR_REASONS`.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


class ProbeError(M3MonError):
    """A probe could not be run at all (as opposed to running and failing its verdict)."""


class StoreError(M3MonError):
    """The store could not be reached or written; callers buffer and retry."""


class GenerateError(M3MonError):
    """Rules, dashboards or routing could not be generated from the configuration."""


class ServiceError(M3MonError):
    """``m3mon run`` or ``m3mon sim`` could not start, e.g. the address it listens on is taken."""


class ReportError(M3MonError):
    """The weekly report could not be built or delivered."""
