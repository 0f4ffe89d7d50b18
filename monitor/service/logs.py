"""Log formats of ``m3mon run --log.format``: ``plain`` (default), ``logfmt`` or ``json``.

``json`` writes one object per line with ``ts`` (RFC 3339, UTC, milliseconds), ``level``,
``logger``, ``msg`` and, when an exception is logged, ``exc`` (the traceback as one string);
``logfmt`` writes the same keys as ``key=value`` pairs, quoting values with spaces, quotes or
``=``. uvicorn's loggers propagate to the root logger, so they use the same format.

:func:`configure` also installs :data:`monitor.service.repeats.REPEATS` on every handler (a
repeated warning is logged once, then counted) and lets the lines that say where the service
listens, that it stopped, and that a repeated warning stopped through at the default
``--log-level WARNING`` (they are INFO lines; ``--log-level ERROR`` hides them).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from monitor.service.repeats import REPEATS
from monitor.service.repeats import log as repeats_log

#: The logger of the start and stop lines of ``m3mon run``.
LIFECYCLE = "monitor.service.lifecycle"

FORMATS = ("plain", "logfmt", "json")
PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _fields(formatter: logging.Formatter, record: logging.LogRecord) -> dict[str, str]:
    ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    fields = {"ts": ts, "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
    if record.exc_info:
        fields["exc"] = formatter.formatException(record.exc_info)
    return fields


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(self, record), ensure_ascii=False)


def _logfmt_value(value: str) -> str:
    if value and not any(c in value for c in ' ="\n\t\\'):
        return value
    return (
        '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    )


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_logfmt_value(v)}" for k, v in _fields(self, record).items())


def formatter(name: str) -> logging.Formatter:
    """The formatter for a ``--log.format`` value (ValueError for an unknown one)."""
    if name == "json":
        return JsonFormatter()
    if name == "logfmt":
        return LogfmtFormatter()
    if name == "plain":
        return logging.Formatter(PLAIN)
    raise ValueError(f"unknown log format {name!r}; expected one of {', '.join(FORMATS)}")


def configure(name: str) -> None:
    """Use format ``name`` on every handler of the root logger (adding one if there is none),
    hold repeated warnings back on each, and show the service's own notes (see above)."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler())
    for handler in root.handlers:
        handler.setFormatter(formatter(name))
        if REPEATS not in handler.filters:  # first: it keys on the template, before redaction renders it
            handler.filters.insert(0, REPEATS)
    if logging.INFO < root.getEffectiveLevel() <= logging.WARNING:
        for notes in (logging.getLogger(LIFECYCLE), repeats_log):
            notes.setLevel(logging.INFO)


def unconfigure() -> None:
    """Undo :func:`configure`'s filter and notes (the format stays): when ``m3mon run`` returns
    inside a longer-lived process (the CLI called in-process), its logging is left as it was."""
    for handler in logging.getLogger().handlers:
        if REPEATS in handler.filters:
            handler.removeFilter(REPEATS)
    for notes in (logging.getLogger(LIFECYCLE), repeats_log):
        notes.setLevel(logging.NOTSET)
