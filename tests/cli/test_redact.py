"""Redaction (monitor.redact) and the failure lines and exit statuses (monitor.cli.failures)."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator

import pytest
from sqlalchemy.exc import ArgumentError

from monitor import redact
from monitor.cli import main
from monitor.cli.failures import failure
from monitor.errors import ConfigError, M3MonError, StoreError, UsageError


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    redact.forget()
    yield
    redact.forget()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql+psycopg://m3mon:s3cr%40t@db:5432/m3mon", "postgresql+psycopg://m3mon:***@db:5432/m3mon"),
        ("see postgresql://u:p/w:x@h/db now", "see postgresql://u:***@h/db now"),
        ("sqlite:////var/lib/m3mon.db and http://127.0.0.1:8000/metrics", None),
        ("mail me@example.com at host:9464", None),
        ("host=db password=hunter22 dbname=m3mon", "host=db password=*** dbname=m3mon"),
        ("dsn: PASSWORD = 'two words' port=5", "dsn: PASSWORD = *** port=5"),
        ("postgresql://?user=u&password=pw1234&x=1", "postgresql://?user=u&password=***&x=1"),
    ],
)
def test_passwords_in_urls_and_settings_are_masked(text: str, expected: str | None) -> None:
    assert redact.redact(text) == (text if expected is None else expected)


def test_remembered_secrets_are_masked_anywhere() -> None:
    redact.remember_url("postgresql://m3mon:Pa%2Fss-w0rd@db/m3mon")
    redact.remember("abc")  # too short to mask as a bare string
    assert redact.redact("got Pa%2Fss-w0rd and Pa/ss-w0rd, abc") == "got *** and ***, abc"
    assert redact.one_line("first Pa/ss-w0rd\n\n  second  \n") == "first ***; second"


def test_log_records_arguments_and_tracebacks_are_redacted() -> None:
    logger = logging.getLogger("tests.redact")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        redact.protect_logging(logger)
        redact.protect_logging(logger)  # idempotent: one filter
        assert len(handler.filters) == 1
        redact.remember("Sup3r-secret")
        logger.warning("connecting to %s", "postgresql://u:Sup3r-secret@h/db")
        try:
            raise RuntimeError("login Sup3r-secret refused")
        except RuntimeError:
            logger.exception("failed for %r", {"password": "Sup3r-secret"})
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    text = stream.getvalue()
    assert "Sup3r-secret" not in text
    assert "connecting to postgresql://u:***@h/db" in text
    assert "RuntimeError: login *** refused" in text and "Traceback" in text


def test_everything_printed_inside_a_command_is_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    redact.remember("Sup3r-secret")
    with redact.redacted_output():
        print("out Sup3r-secret")
        print("err postgresql://u:other-pw@h/db", file=sys.stderr)
        sys.stdout.writelines(["a Sup3r-secret\n"])
    print("after Sup3r-secret")  # the streams are restored
    captured = capsys.readouterr()
    assert captured.out == "out ***\na ***\nafter Sup3r-secret\n"
    assert captured.err == "err postgresql://u:***@h/db\n"


@pytest.mark.parametrize(
    ("exc", "message", "status"),
    [
        (UsageError("--at: bad"), "--at: bad", 2),
        (ConfigError(["a.yaml:1: x", "a.yaml:2: y"]), "configuration error\na.yaml:1: x\na.yaml:2: y", 2),
        (StoreError("database unreachable: postgresql://u:pw12@h/db (x)\nmore"),
         "database unreachable: postgresql://u:***@h/db (x); more", 1),
        (M3MonError("check failed"), "check failed", 1),
        (ArgumentError("Could not parse SQLAlchemy URL"), "bad database URL: Could not parse SQLAlchemy URL", 2),
        (FileNotFoundError(2, "No such file or directory", "/x/y"), "/x/y: No such file or directory", 1),
        (RuntimeError("boom\nsecond line"),
         "internal error: RuntimeError: boom (the traceback is logged with --log-level DEBUG)", 1),
    ],
)  # fmt: skip
def test_failures_are_one_line_with_their_exit_status(exc: BaseException, message: str, status: int) -> None:
    assert failure(exc) == (message, status)


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["slo", "status", "--at", "now"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert (
        err
        == "m3mon slo status: the following arguments are required: -c/--config (see m3mon slo status --help)\n"
    )
