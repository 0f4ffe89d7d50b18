"""``m3mon report -c FILE [--week 2026-W48 | --since 7d] -o DIR [--email] [--webhook URL]``."""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from monitor.errors import ReportError, UsageError

if TYPE_CHECKING:
    from monitor.report.data import Period


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "report",
        help="write the weekly SLO report (HTML, PDF, Markdown, JSON) and optionally send it",
        description="Build the SLO report of one week from the store and write report.html, report.pdf, "
        "report.md and report.json into DIR. Without --week or --since, the last complete week (Monday "
        "00:00 in report.timezone) is reported. See docs/report.md.",
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--week", metavar="YYYY-Www", help="ISO week to report, e.g. 2026-W48")
    when.add_argument("--since", metavar="DURATION", help="report the last DURATION instead (7d, 36h, 2w)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the four files")
    p.add_argument("--email", action="store_true", help="e-mail the report to report.recipients")
    p.add_argument(
        "--webhook",
        nargs="?",
        const="",
        metavar="URL",
        help="post a Slack-compatible summary to URL (alone: to report.webhook_url)",
    )
    p.add_argument("--db", metavar="URL", help="database URL (default: storage.url of the config)")
    p.add_argument("--now", metavar="ISO8601", help="pretend it is this time (for reproducible reports)")
    p.set_defaults(func=run)


def _now(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        now = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--now: expected an ISO 8601 time, got {text!r}") from None
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def _period(args: argparse.Namespace, timezone: str, now: datetime) -> Period:
    from monitor.report import periods

    tz = periods.zone(timezone)
    if args.week:
        return periods.not_future(periods.iso_week(args.week, tz), now)
    if args.since:
        return periods.since(args.since, now.astimezone(tz))
    return periods.last_complete_week(now, tz)


def run(args: argparse.Namespace) -> int:
    from monitor.addresses import checked_storage_url
    from monitor.model import load_model
    from monitor.report import delivery, generate
    from monitor.store import Store

    model = load_model(args.config)
    now = _now(args.now)
    try:
        week = _period(args, model.report.timezone, now)
    except ReportError as exc:  # a bad --week, --since or report.timezone: bad input
        raise UsageError(str(exc)) from None
    store = Store(checked_storage_url(args.db, "--db") if args.db else model.storage.url)
    try:
        rendered = generate.render(generate.build(model, store, week, now))
    finally:
        store.close()
    paths = generate.write(rendered, args.output)
    for path in paths.values():
        print(path)
    if args.email:
        delivery.send_email(model.report.smtp, delivery.email_message(model, rendered))
        print(f"e-mailed to {', '.join(model.report.recipients)}")
    if args.webhook is not None:
        url = args.webhook or model.report.webhook_url
        if not url:
            raise ReportError("--webhook without URL needs report.webhook_url in the config")
        asyncio.run(delivery.post_webhook(url, rendered))
        print("summary posted to the webhook")
    return 0
