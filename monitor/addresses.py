"""Addresses a command is given: a listen address and a database URL, checked one way wherever
they enter (the configuration file, ``M3MON_STORAGE_URL``, ``--listen``, ``--db``)."""

from __future__ import annotations

import re

from monitor.errors import ConfigError

#: ``HOST:PORT`` (the port's range is checked by :func:`listen_address`).
LISTEN_PATTERN = r"^[^\s:]+:\d{1,5}$"
LISTEN_WORDS = "HOST:PORT such as 127.0.0.1:9464"
#: Databases the store runs on (SQLAlchemy URL schemes, with or without a driver: postgresql+psycopg).
STORAGE_SCHEMES = ("sqlite", "postgresql", "postgres")


def listen_address(value: str) -> str:
    """``value`` when it is ``HOST:PORT`` with a port from 1 to 65535 (``exporter.listen``, ``m3mon
    run --listen``); ValueError saying what was expected otherwise."""
    if not re.match(LISTEN_PATTERN, value):
        raise ValueError(f"expected {LISTEN_WORDS}, got {value!r}")
    if not 1 <= int(value.rpartition(":")[2]) <= 65535:
        raise ValueError(f"expected a port from 1 to 65535, got {value!r}")
    return value


def storage_url_problem(url: str) -> str | None:
    """Why ``url`` cannot name the store (a scheme other than sqlite or postgresql), without
    echoing a password; None when it can. The one check for ``storage.url``, ``M3MON_STORAGE_URL``
    and ``--db``."""
    scheme = url.partition(":")[0].partition("+")[0]
    if scheme in STORAGE_SCHEMES:
        return None
    head, at, host = url.rpartition("@")
    shown = f"{head.partition('://')[0]}://***@{host}" if at else url
    return f"expected a sqlite:/// or postgresql:// URL, got {shown!r}"


def checked_storage_url(url: str, origin: str) -> str:
    """``url`` from ``origin`` (``M3MON_STORAGE_URL``, ``--db``) when it can name the store; else a
    ConfigError naming the origin, as for ``storage.url`` in the file (exit 2)."""
    problem = storage_url_problem(url)
    if problem is not None:
        raise ConfigError([f"{origin}: {problem}"])
    return url
