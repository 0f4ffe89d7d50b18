"""Issue 24, finding 7: the demo's report compares with last week. With the default history (two
weeks), the report covers the last 7 days and the week before it is history too, so every line
has a last week to compare with; the brown-out and the deployment change fall inside the reported
week. On the old default (7 days, the report = the whole history) the week before held nothing."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

from monitor.cli import demo as demo_cli
from monitor.demo.summary import report_period
from monitor.history.scenario import scenario
from monitor.report.periods import previous

NOW = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)


def _default_days() -> float:
    parser = argparse.ArgumentParser()
    demo_cli.register(parser.add_subparsers())
    args = parser.parse_args(["demo"])
    return float(args.history)


def test_the_default_history_has_a_week_before_the_reported_one() -> None:
    days = _default_days()
    start = NOW.timestamp() - days * 86400
    week = report_period(start, NOW)
    before = previous(week)
    assert week.end == NOW and week.seconds == 7 * 86400
    assert before.start.timestamp() >= start and before.end == week.start  # last week is all history
    story = scenario(NOW.timestamp(), days)
    lo, hi = week.start.timestamp(), week.end.timestamp()
    assert lo < story.deployment_at < hi and lo < story.brownout[0] < story.brownout[1] < hi


def test_any_hour_of_the_day_puts_the_story_in_the_reported_week() -> None:
    """The story's events move to a plausible hour of their day: at every start hour they stay
    inside the last 7 days of a two-week history."""
    for hour in range(24):
        now = NOW.replace(hour=hour, minute=0) + timedelta(minutes=7 * hour)
        start = now.timestamp() - 14 * 86400
        week = report_period(start, now)
        story = scenario(now.timestamp(), 14)
        assert week.start.timestamp() < story.brownout[0] and week.start.timestamp() < story.deployment_at, (
            hour
        )


def test_a_short_history_is_reported_whole() -> None:
    start = NOW.timestamp() - 2 * 86400
    assert report_period(start, NOW).start.timestamp() == start
