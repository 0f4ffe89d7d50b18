"""The sections every test config carries besides its endpoints and classes."""

from __future__ import annotations


def service_sections(folder: object, *, spool: bool = True) -> str:
    """Top-level ``storage`` (SQLite in ``folder``, spool beside it), ``alerting`` and ``report``
    YAML, to append to a config's ``endpoints`` and ``request_classes``."""
    buffer = f', buffer_dir: "{folder}/spool"' if spool else ""
    return (
        f'storage: {{url: "sqlite:///{folder}/m3mon.db"{buffer}}}\n'
        "alerting:\n"
        "  page: {receiver: pager}\n"
        "  ticket: {receiver: chat}\n"
        "  monitor_receiver_url: http://127.0.0.1:9/alertmanager\n"
        "report:\n"
        "  recipients: [a@example.com]\n"
        "  smtp: {host: 127.0.0.1, sender: m3mon@example.com}\n"
    )
