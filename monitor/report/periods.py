"""Which stretch of time a report covers: an ISO week, the last N days, or the week just ended.

Weeks start on Monday 00:00 in the report's timezone. A period ``[start, end)`` counts the event
slices whose end lies in ``(start, end]``, the store's window convention, so a scrape interval
ending exactly at Monday 00:00 belongs to the week it measured.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from monitor.errors import ReportError
from monitor.report.data import Period

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_SINCE = re.compile(r"^(\d+)([hdw])$")
_UNITS = {"h": 3600, "d": 86400, "w": 604800}


def zone(name: str) -> ZoneInfo:
    """The IANA timezone ``name``; ReportError when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ReportError(
            f"unknown timezone {name!r} (expected an IANA name such as Europe/Berlin)"
        ) from None


def iso_week(label: str, tz: ZoneInfo) -> Period:
    """The ISO week ``2026-W48`` in ``tz``; ReportError for a malformed or impossible week."""
    m = _WEEK.match(label.strip())
    if not m:
        raise ReportError(f"--week: expected YYYY-Www such as 2026-W48, got {label!r}")
    try:
        monday = date.fromisocalendar(int(m[1]), int(m[2]), 1)
    except ValueError:
        raise ReportError(f"--week: {label!r} is not a week of year {m[1]}") from None
    start = datetime(monday.year, monday.month, monday.day, tzinfo=tz)
    return Period(label.strip(), start, _add_days(start, 7))


def not_future(period: Period, now: datetime) -> Period:
    """``period``, or ReportError when it starts after ``now`` (a week that has not begun has no
    data; its report would show budgets as of a time that has not happened)."""
    if period.start > now:
        raise ReportError(
            f"--week: {period.label} starts {period.start:%Y-%m-%d %H:%M %Z}, after now "
            f"({now.astimezone(period.start.tzinfo):%Y-%m-%d %H:%M %Z}): it has not begun"
        )
    return period


def _add_days(start: datetime, days: int) -> datetime:
    """Local midnight ``days`` later (a week across a DST change is 167 or 169 hours)."""
    d = start.date() + timedelta(days=days)
    return datetime(d.year, d.month, d.day, tzinfo=start.tzinfo)


def week_of(at: datetime, tz: ZoneInfo) -> Period:
    """The ISO week of ``tz`` holding the instant ``at``."""
    year, week, _ = at.astimezone(tz).isocalendar()
    return iso_week(f"{year}-W{week:02d}", tz)


def last_complete_week(now: datetime, tz: ZoneInfo) -> Period:
    """The latest ISO week of ``tz`` that has ended at ``now`` (the week before the current one)."""
    current = week_of(now, tz)
    return week_of(current.start - timedelta(seconds=1), tz)


def since(spec: str, now: datetime) -> Period:
    """The last ``7d`` / ``36h`` / ``2w`` up to ``now``."""
    m = _SINCE.match(spec.strip())
    if not m or int(m[1]) <= 0:
        raise ReportError(f"--since: expected a positive duration such as 7d, 36h or 2w, got {spec!r}")
    start = _shift(now, -int(m[1]) * _UNITS[m[2]])
    return Period(f"last {spec.strip()} to {now:%Y-%m-%d %H:%M}", start, now)


def _shift(at: datetime, seconds: float) -> datetime:
    """``at`` moved by elapsed ``seconds`` (through UTC, so a DST change does not stretch it)."""
    return (at.astimezone(UTC) + timedelta(seconds=seconds)).astimezone(at.tzinfo)


def previous(period: Period) -> Period:
    """The period of the same length just before ``period`` (last week, for a week)."""
    if _WEEK.match(period.label) and isinstance(period.start.tzinfo, ZoneInfo):
        return week_of(period.start - timedelta(seconds=1), period.start.tzinfo)
    start = _shift(period.start, -period.seconds)
    return Period(f"{start:%Y-%m-%d %H:%M} to {period.start:%Y-%m-%d %H:%M}", start, period.start)
