"""Maintenance windows: which instants they hold and what the monitor publishes, by hand.

Every expected instant below is worked out by hand from the calendar (UTC offsets of
Europe/Berlin: +2 h until the last Sunday of October 2026, 25 October, at 03:00 local, +1 h after).
"""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from monitor.maintenance import Maintenance, MaintenanceSpec, build_maintenance
from monitor.model import SLO
from monitor.slo.evaluate import evaluate_slices
from monitor.slo.slices import EventSlice

SERVED = {"pool-a": ["chat", "agent"], "pool-b": ["chat"]}


def utc(*args: int) -> float:
    return dt.datetime(*args, tzinfo=dt.UTC).timestamp()


def calendar(**spec: object) -> Maintenance:
    return build_maintenance([MaintenanceSpec.model_validate({"name": "w", **spec})], SERVED)


def test_a_one_off_window_holds_start_exclusive_end_inclusive() -> None:
    m = calendar(start="2026-11-30T10:00:00Z", duration="30m", classes=["chat"])
    start, end = utc(2026, 11, 30, 10, 0), utc(2026, 11, 30, 10, 30)
    assert m.excluding("chat", "pool-a", start) is None  # an event at exactly start: before the work
    assert m.excluding("chat", "pool-a", start + 0.001) == "w"
    assert m.excluding("chat", "pool-b", end) == "w"  # exactly end: during
    assert m.excluding("chat", "pool-b", end + 0.001) is None
    assert m.excluding("agent", "pool-a", start + 60) is None  # another class


def test_end_instead_of_duration_and_naive_times_in_the_zone() -> None:
    m = calendar(start="2026-07-01T09:00:00", end="2026-07-01T09:45:00", timezone="Europe/Berlin",
                 endpoints=["pool-b"])  # fmt: skip
    [occ] = m.occurrences(utc(2026, 7, 1), utc(2026, 7, 2))
    assert (occ.start, occ.end) == (utc(2026, 7, 1, 7, 0), utc(2026, 7, 1, 7, 45))


def test_a_weekly_rule_keeps_local_time_across_the_end_of_summer_time() -> None:
    m = calendar(start="2026-10-18T04:00:00", duration="1h", rrule="FREQ=WEEKLY;BYDAY=SU;COUNT=3",
                 timezone="Europe/Berlin", classes=["chat"])  # fmt: skip
    got = [(o.start, o.end) for o in m.occurrences(utc(2026, 10, 1), utc(2026, 12, 1))]
    assert got == [
        (utc(2026, 10, 18, 2, 0), utc(2026, 10, 18, 3, 0)),  # 04:00 CEST
        (utc(2026, 10, 25, 3, 0), utc(2026, 10, 25, 4, 0)),  # 04:00 CET, after the change at 03:00
        (utc(2026, 11, 1, 3, 0), utc(2026, 11, 1, 4, 0)),
    ]  # COUNT=3: nothing after
    assert m.excluding("chat", "pool-a", utc(2026, 10, 25, 2, 30)) is None  # 03:30 CET is not 04:00
    assert m.excluding("chat", "pool-a", utc(2026, 10, 25, 3, 30)) == "w"


def test_a_window_in_the_hour_repeated_when_clocks_go_back_is_excluded_by_real_instants() -> None:
    # 02:30 CEST on 25 October 2026 is 00:30Z; an hour later it is 01:30Z (02:30 CET, the second time)
    m = calendar(start="2026-10-18T02:30:00", duration="1h", rrule="FREQ=WEEKLY;BYDAY=SU",
                 timezone="Europe/Berlin", classes=["chat"])  # fmt: skip
    assert m.excluding("chat", "pool-a", utc(2026, 10, 25, 0, 30)) is None
    for minute in (31, 60, 80, 90):  # 01:20Z reads 02:20 CET, "before" 02:30 on the wall clock
        assert m.excluding("chat", "pool-a", utc(2026, 10, 25, 0, 0) + minute * 60) == "w", minute
    assert m.excluding("chat", "pool-a", utc(2026, 10, 25, 1, 31)) is None
    [(_, _, occ), *_] = list(m.published(utc(2026, 10, 24, 12, 0)))
    assert (occ.start, occ.end) == (utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30))


def test_occurrences_overlapping_a_range_only() -> None:
    m = calendar(start="2026-11-02T00:00:00Z", duration="2h", rrule="FREQ=DAILY", classes=["chat"])
    got = [o.start for o in m.occurrences(utc(2026, 11, 3, 1, 0), utc(2026, 11, 5, 0, 0))]
    # (Nov 3 01:00, Nov 5 00:00]: Nov 3's occurrence is still running; Nov 5's starts at the range end
    assert got == [utc(2026, 11, 3), utc(2026, 11, 4)]
    assert m.occurrences(utc(2026, 11, 3, 2, 0), utc(2026, 11, 3, 23, 0)) == []  # ended exactly at since


def test_published_boundaries_are_current_then_next_then_none() -> None:
    m = calendar(start="2026-11-30T10:00:00Z", duration="30m", endpoints=["pool-a"])
    start, end = utc(2026, 11, 30, 10, 0), utc(2026, 11, 30, 10, 30)
    before = list(m.published(start - 3600))
    assert sorted((t, o.start, o.end) for _, t, o in before) == [
        (("agent", "pool-a"), start, end),
        (("chat", "pool-a"), start, end),
    ]
    assert {(t, o.end) for _, t, o in m.published(end)} == {
        (("agent", "pool-a"), end),
        (("chat", "pool-a"), end),
    }
    assert list(m.published(end + 1)) == []  # a one-off window, over


def test_a_daily_rule_publishes_the_next_occurrence_once_one_ends() -> None:
    m = calendar(start="2026-11-02T00:00:00Z", duration="2h", rrule="FREQ=DAILY", classes=["chat"])
    [(_, _, occ), *_] = list(m.published(utc(2026, 11, 3, 2, 0, 1)))
    assert (occ.start, occ.end) == (utc(2026, 11, 4), utc(2026, 11, 4, 2, 0))


def test_whole_class_and_whole_endpoint_flags() -> None:
    [w] = calendar(start="2026-11-30T10:00:00Z", duration="1h", endpoints=["pool-a"]).windows
    assert w.targets == {("chat", "pool-a"), ("agent", "pool-a")}
    assert w.whole_classes == {"agent"}  # chat is also served by pool-b
    assert w.whole_endpoints == {"pool-a"}
    [w] = calendar(start="2026-11-30T10:00:00Z", duration="1h", classes=["chat"]).windows
    assert w.whole_classes == {"chat"} and w.whole_endpoints == {"pool-b"}  # pool-a also serves agent


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"start": "2026-11-30T10:00:30Z", "duration": "1h", "classes": ["chat"]}, "whole minutes"),
        ({"start": "2026-11-30T10:00:00Z", "duration": "90s", "classes": ["chat"]}, "lasts whole minutes"),
        ({"start": "2026-11-30T10:00:00Z", "classes": ["chat"]}, "exactly one of 'duration' and 'end'"),
        ({"start": "2026-11-30T10:00:00Z", "end": "2026-11-30T09:00:00Z", "classes": ["chat"]},
         "'end' must be after 'start'"),
        ({"start": "2026-11-30T10:00:00Z", "duration": "1h"}, "name the 'classes' or 'endpoints'"),
        ({"start": "2026-11-30T10:00:00Z", "duration": "1h", "classes": ["chat"], "rrule": "FREQ=SOMETIMES"},
         "not an RFC 5545 recurrence rule"),
        ({"start": "2026-11-30T10:00:00Z", "duration": "25h", "classes": ["chat"], "rrule": "FREQ=DAILY"},
         "occurrences overlap or touch"),
        ({"start": "2026-11-30T10:00:00Z", "duration": "1h", "classes": ["chat"], "timezone": "Mars/Olympus"},
         "unknown time zone"),
    ],
)  # fmt: skip
def test_bad_windows_say_what_is_wrong(spec: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MaintenanceSpec.model_validate({"name": "w", **spec})


def test_excluded_slices_count_in_no_window() -> None:
    slo = SLO("chat", "availability", "availability", 0.99, 30 * 86400.0, "probes")
    at = utc(2026, 11, 30, 11, 0)
    slices = [
        EventSlice(slo.id, "pool-a", "probe:chat", at - 120, at - 120, 1, 1, "probes"),
        EventSlice(slo.id, "pool-a", "probe:chat", at - 60, at - 60, 0, 1, "probes", maintenance="w"),
    ]
    ev = evaluate_slices(slo, slices, at)
    w5m = ev.window("5m")
    assert w5m is not None and (w5m.good, w5m.total) == (1, 1)
    assert ev.status == "ok"
