"""E-mail through a real SMTP server (aiosmtpd) and the webhook through a real loopback HTTP server."""

from __future__ import annotations

import asyncio
import email
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from monitor.errors import ReportError
from monitor.report import delivery
from monitor.report.schedule import cron_trigger
from monitor.store import Store
from tests.report import week as W
from tests.report.conftest import Built


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


@pytest.fixture
def smtp() -> Iterator[tuple[Controller, _Inbox]]:
    inbox = _Inbox()
    with socket.socket() as probe:  # a free loopback port (aiosmtpd checks readiness by connecting)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(inbox, hostname="127.0.0.1", port=port, ready_timeout=10)
    controller.start()
    try:
        yield controller, inbox
    finally:
        controller.stop()


def test_email_arrives_with_html_and_pdf(built: Built, smtp: tuple[Controller, _Inbox]) -> None:
    controller, inbox = smtp
    model = built.week.model
    cfg = replace(model.report.smtp, host="127.0.0.1", port=controller.port)
    delivery.send_email(cfg, delivery.email_message(model, built.rendered), timeout=10)
    (sender, rcpts, raw) = inbox.messages[0]
    assert sender == "m3mon@example.com" and rcpts == ["sre@example.com", "product@example.com"]
    msg: Message = email.message_from_bytes(raw)
    assert msg["Subject"] == "[m3mon] 2026-W48: 2 request class(es) need attention"
    parts = {p.get_content_type(): p for p in msg.walk() if not p.is_multipart()}
    html = parts["text/html"].get_payload(decode=True)
    assert isinstance(html, bytes) and b"98.810%" in html and b"&lt;script&gt;" in html
    pdf = parts["application/pdf"]
    assert pdf.get_filename() == "m3mon-report-2026-W48.pdf"
    body = pdf.get_payload(decode=True)
    assert isinstance(body, bytes) and body.startswith(b"%PDF") and body == built.rendered.pdf
    assert b"98.810%" in (parts["text/plain"].get_payload(decode=True) or b"")


def test_email_login_needs_the_named_environment_variables(built: Built) -> None:
    cfg = replace(built.week.model.report.smtp, username_env="M3MON_TEST_NO_SUCH_USER", password_env="X")
    with pytest.raises(ReportError, match="M3MON_TEST_NO_SUCH_USER is not set"):
        delivery.send_email(cfg, delivery.email_message(built.week.model, built.rendered), timeout=5)


def test_unreachable_smtp_is_a_clear_error(built: Built) -> None:
    cfg = replace(built.week.model.report.smtp, host="127.0.0.1", port=1)
    with pytest.raises(ReportError, match=r"cannot send the report via 127\.0\.0\.1:1"):
        delivery.send_email(cfg, delivery.email_message(built.week.model, built.rendered), timeout=5)


class _Hook(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(json.loads(body))
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def hook() -> Iterator[tuple[str, type[_Hook]]]:
    handler = type("Hook", (_Hook,), {"received": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_webhook_receives_a_slack_summary(built: Built, hook: tuple[str, type[_Hook]]) -> None:
    url, handler = hook
    asyncio.run(delivery.post_webhook(url, built.rendered, timeout=10))
    (body,) = handler.received
    assert body["text"].startswith(
        "M3 weekly SLO report 2026-W48: 2 need attention: agent (missed), chat (at risk)"
    )
    texts = json.dumps(body["blocks"])
    assert body["blocks"][0]["type"] == "header" and "98.810%" in texts
    assert "<script>" not in texts and W.API_KEY not in texts


def test_webhook_error_status_is_reported(built: Built, hook: tuple[str, type[_Hook]]) -> None:
    url, handler = hook
    handler.status = 500
    with pytest.raises(ReportError, match="webhook answered HTTP 500"):
        asyncio.run(delivery.post_webhook(url, built.rendered, timeout=10))


def test_schedule_becomes_a_weekly_cron_trigger() -> None:
    from datetime import UTC, datetime

    trig = cron_trigger("mon 09:00", "Europe/Berlin")
    nxt = trig.get_next_fire_time(None, datetime(2026, 11, 25, tzinfo=UTC))
    assert nxt.isoformat() == "2026-11-30T09:00:00+01:00"
    with pytest.raises(ReportError, match="weekly time"):
        cron_trigger("monday 9am", "UTC")
    with pytest.raises(ReportError, match="unknown timezone"):
        cron_trigger("mon 09:00", "Mars/Olympus")


def test_send_weekly_writes_mails_and_posts(
    built: Built, smtp: tuple[Controller, _Inbox], hook: tuple[str, type[_Hook]], tmp_path: Path
) -> None:
    controller, inbox = smtp
    url, handler = hook
    model = built.week.model
    cfg = replace(model.report, smtp=replace(model.report.smtp, port=controller.port), webhook_url=url)
    store = Store(built.week.url)
    try:
        rendered = asyncio.run(delivery.send_weekly(replace(model, report=cfg), store, W.NOW, tmp_path))
    finally:
        store.close()
    assert rendered.data.week.label == "2026-W48"  # the week that ended before Monday 09:00
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF")
    assert len(inbox.messages) == 1 and len(handler.received) == 1
