"""Secrets out of everything m3mon prints or logs: passwords are shown as ``***``.

:func:`redact` masks the password of every ``scheme://user:password@host`` URL, libpq
``password=...`` settings, and every secret :func:`remember`-ed so far (the password of each
database URL the store connects to, and of ``M3MON_STORAGE_URL``), wherever it appears.

The CLI routes all of a command's output through it: :func:`redacted_output` wraps
``sys.stdout``/``sys.stderr`` for the duration of a command, and :class:`RedactingFilter` (added by
:func:`protect_logging` to every handler of the root logger) redacts log records, their arguments
and their tracebacks before any formatter sees them. A service that installs its own log handlers
(e.g. JSON logs) calls :func:`protect_logging` again afterwards.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO, cast
from urllib.parse import unquote

MASK = "***"
#: Secrets shorter than this are not masked as bare strings (a one-letter password would turn every
#: such letter into ``***``); in URLs and ``password=`` settings they are masked all the same.
MIN_SECRET = 4

_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:)(?P<pw>[^@\s]+)(?=@)")
_CONNINFO_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'[^']*'|[^\s&]+)", re.IGNORECASE)

_secrets: set[str] = set()
_lock = threading.Lock()


def remember(secret: str | None) -> None:
    """Mask ``secret`` wherever it appears from now on (in this process)."""
    if secret and len(secret) >= MIN_SECRET and secret != MASK:
        with _lock:
            _secrets.add(secret)


def remember_url(url: str | None) -> None:
    """Mask the password of ``url`` (as written and percent-decoded) wherever it appears."""
    for match in _URL_PASSWORD.finditer(url or ""):
        remember(match["pw"])
        remember(unquote(match["pw"]))


def forget() -> None:
    """Forget every remembered secret (a fresh process's state; for tests)."""
    with _lock:
        _secrets.clear()


def redact(text: str) -> str:
    """``text`` with URL passwords, ``password=`` settings and remembered secrets as ``***``."""
    text = _URL_PASSWORD.sub(lambda m: m["head"] + MASK, text)
    text = _CONNINFO_PASSWORD.sub(lambda m: m["head"] + MASK, text)
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def one_line(text: str) -> str:
    """``text`` redacted and on one line (its lines joined with ``; ``)."""
    return "; ".join(line.strip() for line in redact(text).splitlines() if line.strip())


class RedactingFilter(logging.Filter):
    """Redacts a record's message, arguments, traceback and stack before it is formatted."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it itself when formatting
            return True
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def protect_logging(logger: logging.Logger | None = None) -> None:
    """Add a :class:`RedactingFilter` to every handler of ``logger`` (default: the root logger)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


class RedactingStream:
    """A text stream that redacts what is written to it, delegating everything else."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextmanager
def redacted_output() -> Iterator[None]:
    """Redact everything written to ``sys.stdout`` and ``sys.stderr`` inside the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, RedactingStream(sys.stdout))
    sys.stderr = cast(TextIO, RedactingStream(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
