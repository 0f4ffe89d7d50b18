"""Log formats of ``m3mon run --log.format``: ``plain`` (default), ``logfmt`` or ``json``.

``json`` writes one object per line with ``ts`` (RFC 3339, UTC, milliseconds), ``level``,
``logger``, ``msg`` and, when an exception is logged, ``exc`` (the traceback as one string);
``logfmt`` writes the same keys as ``key=value`` pairs, quoting values with spaces, quotes or
``=``. uvicorn's loggers propagate to the root logger, so they use the same format.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

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
    """Use format ``name`` on every handler of the root logger (adding one if there is none)."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler())
    for handler in root.handlers:
        handler.setFormatter(formatter(name))
