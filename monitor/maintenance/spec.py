"""Maintenance windows as the user writes them (``maintenance:`` in the config or a maintenance file).

A window is a first occurrence (``start`` plus ``duration`` or ``end``), optionally repeated by an
RFC 5545 recurrence rule (``rrule``, e.g. ``FREQ=WEEKLY;BYDAY=SU``) whose DTSTART is ``start``, in
``timezone`` (an IANA name; wall-clock times recur across daylight-saving changes). It applies to
``classes`` (every endpoint serving them), ``endpoints`` (every class they serve) or, with both,
those endpoints for those classes. Boundaries are whole minutes. docs/maintenance.md has the rest.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.rrule import rrule, rrulestr
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from monitor.durations import Duration

_NAME = r"^[a-z0-9][a-z0-9_.-]{0,62}$"
#: How many occurrences are checked for overlaps when the config is read.
CHECKED_OCCURRENCES = 500


class MaintenanceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: Annotated[str, Field(pattern=_NAME)]
    start: dt.datetime
    duration: Duration | None = None
    end: dt.datetime | None = None
    rrule: str | None = None
    timezone: str = "UTC"
    classes: list[str] = []
    endpoints: list[str] = []
    reason: str = ""

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r} (expected an IANA name such as Europe/Berlin)"
            ) from None
        return value

    @field_validator("start", "end")
    @classmethod
    def _whole_minute(cls, value: dt.datetime | None) -> dt.datetime | None:
        if value is not None and (value.second or value.microsecond):
            raise ValueError(f"maintenance boundaries are whole minutes, got {value.isoformat()}")
        return value

    @field_validator("rrule")
    @classmethod
    def _rrule(cls, value: str | None) -> str | None:
        if value is None:
            return None
        text = value.removeprefix("RRULE:")
        if "DTSTART" in text.upper():
            raise ValueError("the recurrence starts at 'start'; leave DTSTART out of rrule")
        try:
            parsed = rrulestr(text, dtstart=dt.datetime(2026, 1, 1))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not an RFC 5545 recurrence rule ({exc}): {value!r}") from None
        if not isinstance(parsed, rrule):
            raise ValueError("one RRULE only (no RDATE, EXDATE or EXRULE lines)")
        return text

    @model_validator(mode="after")
    def _check(self) -> MaintenanceSpec:
        if (self.duration is None) == (self.end is None):
            raise ValueError("give exactly one of 'duration' and 'end'")
        seconds = self.seconds
        if seconds <= 0:
            raise ValueError("'end' must be after 'start'")
        if seconds < 60 or seconds % 60:
            raise ValueError(f"a maintenance window lasts whole minutes (at least 1m), got {seconds:g}s")
        if not self.classes and not self.endpoints:
            raise ValueError("name the 'classes' or 'endpoints' the window applies to (or both)")
        if self.rrule:
            self._no_overlap()
        return self

    @property
    def local_start(self) -> dt.datetime:
        """``start`` as an aware datetime: naive values are wall-clock time in ``timezone``."""
        zone = ZoneInfo(self.timezone)
        return self.start.replace(tzinfo=zone) if self.start.tzinfo is None else self.start.astimezone(zone)

    @property
    def seconds(self) -> float:
        if self.duration is not None:
            return self.duration
        assert self.end is not None
        end = self.end if self.end.tzinfo else self.end.replace(tzinfo=ZoneInfo(self.timezone))
        return (end - self.local_start).total_seconds()

    def _no_overlap(self) -> None:
        assert self.rrule is not None
        rule = rrulestr(self.rrule, dtstart=self.local_start)
        previous: dt.datetime | None = None
        for i, start in enumerate(rule):
            if i >= CHECKED_OCCURRENCES:
                break
            if previous is not None and (start - previous).total_seconds() <= self.seconds:
                raise ValueError(
                    f"occurrences overlap or touch ({previous.isoformat()} and {start.isoformat()} are "
                    f"{(start - previous).total_seconds():g}s apart, the window lasts {self.seconds:g}s); "
                    "shorten the duration or make it one longer window"
                )
            previous = start


class MaintenanceFileSpec(BaseModel):
    """A maintenance file (``maintenance_file:``): windows kept apart from the config, reloaded with it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str = Field(pattern=r"^m3mon/v1$")
    maintenance: list[MaintenanceSpec] = []
