"""Sending the report: e-mail over SMTP (HTML body, PDF attached) and a Slack-compatible webhook.

SMTP settings come from ``report.smtp``; the user name and password are read at send time from
the environment variables that ``username_env`` / ``password_env`` name, never from the config.
:func:`send_weekly` is what the service's scheduler calls (see :mod:`monitor.report.schedule`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import smtplib
import ssl
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path

import httpx

from monitor.errors import M3MonError, ReportError
from monitor.model import Model
from monitor.model_service import Smtp
from monitor.report import generate, slack
from monitor.report.periods import last_complete_week, zone
from monitor.store import Store

log = logging.getLogger(__name__)
TIMEOUT = 30.0


def subject(rendered: generate.Rendered) -> str:
    d = rendered.data
    if d.attention:
        return f"[m3mon] {d.week.label}: {len(d.attention)} request class(es) need attention"
    if d.status == "no_data":
        return f"[m3mon] {d.week.label}: no SLO data"
    return f"[m3mon] {d.week.label}: all SLOs met"


def email_message(model: Model, rendered: generate.Rendered) -> EmailMessage:
    """The message: Markdown as the plain-text part, the HTML page, the PDF attached."""
    if not model.report.recipients:
        raise ReportError("report.recipients is empty: nobody to send the report to")
    msg = EmailMessage()
    msg["Subject"] = subject(rendered)
    msg["From"] = model.report.smtp.sender
    msg["To"] = ", ".join(model.report.recipients)
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = make_msgid(domain="m3mon")
    msg.set_content(rendered.markdown)
    msg.add_alternative(rendered.html, subtype="html")
    name = f"m3mon-report-{rendered.data.week.label.replace(' ', '_').replace(':', '')}.pdf"
    msg.add_attachment(rendered.pdf, maintype="application", subtype="pdf", filename=name)
    return msg


def _credentials(smtp: Smtp) -> tuple[str, str] | None:
    if not smtp.username_env:
        return None
    user = os.environ.get(smtp.username_env)
    password = os.environ.get(smtp.password_env or "")
    if not user or password is None:
        missing = smtp.username_env if not user else smtp.password_env
        raise ReportError(f"report.smtp: environment variable {missing} is not set")
    return user, password


def send_email(smtp: Smtp, message: EmailMessage, timeout: float = TIMEOUT) -> None:
    """Deliver ``message`` through ``smtp`` (STARTTLS and login when configured)."""
    creds = _credentials(smtp)
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=timeout) as client:
            if smtp.starttls:
                client.starttls(context=ssl.create_default_context())
            if creds is not None:
                client.login(*creds)
            client.send_message(message)
    except (OSError, smtplib.SMTPException) as exc:
        raise ReportError(f"cannot send the report via {smtp.host}:{smtp.port}: {exc}") from exc


async def post_webhook(url: str, rendered: generate.Rendered, timeout: float = TIMEOUT) -> None:
    """POST the Slack-compatible summary to ``url``; ReportError unless it answers 2xx."""
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.post(url, json=slack.payload(rendered.data))
    except httpx.HTTPError as exc:
        raise ReportError(f"cannot post the report summary to the webhook: {exc}") from exc
    if not response.is_success:
        raise ReportError(f"webhook answered HTTP {response.status_code}: {response.text[:200]}")


async def send_weekly(
    model: Model, store: Store, now: datetime, out_dir: str | Path | None = None
) -> generate.Rendered:
    """Build the report of the week that ended before ``now`` and deliver it as configured.

    Writes the files to ``out_dir`` when given, e-mails them when ``report.recipients`` is set and
    posts the summary when ``report.webhook_url`` is set. Rendering runs in a worker thread.
    """
    week = last_complete_week(now, zone(model.report.timezone))
    data = await asyncio.to_thread(generate.build, model, store, week, now)
    rendered = await asyncio.to_thread(generate.render, data)
    if out_dir is not None:
        generate.write(rendered, out_dir)
    if model.report.recipients:
        message = email_message(model, rendered)
        await asyncio.to_thread(send_email, model.report.smtp, message)
        log.info("weekly report %s sent to %d recipients", week.label, len(model.report.recipients))
    if model.report.webhook_url:
        await post_webhook(model.report.webhook_url, rendered)
    return rendered


async def weekly_job(model: Model, store: Store, out_dir: str | Path | None = None) -> None:
    """The scheduler's job: :func:`send_weekly` at the current time (errors are logged, not raised)."""
    try:
        await send_weekly(model, store, datetime.now(UTC), out_dir)
    except M3MonError as exc:
        log.error("weekly report not delivered: %s", exc)
