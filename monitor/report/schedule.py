"""When the weekly report goes out: ``report.schedule`` ("mon 09:00") as an APScheduler trigger."""

from __future__ import annotations

import re

from apscheduler.triggers.cron import CronTrigger

from monitor.errors import ReportError
from monitor.report.periods import zone

_SCHEDULE = re.compile(r"^(mon|tue|wed|thu|fri|sat|sun) (\d{2}):(\d{2})$")


def cron_trigger(schedule: str, timezone: str) -> CronTrigger:
    """A CronTrigger firing weekly at ``schedule`` ("mon 09:00") in ``timezone``."""
    m = _SCHEDULE.match(schedule.strip().lower())
    if not m or int(m[2]) > 23 or int(m[3]) > 59:
        raise ReportError(f"report.schedule: expected a weekly time such as 'mon 09:00', got {schedule!r}")
    return CronTrigger(day_of_week=m[1], hour=int(m[2]), minute=int(m[3]), timezone=zone(timezone))
