"""Maintenance windows, frozen: which events they exclude and when each occurrence runs.

An occurrence covers the instants ``(start, end]``, like an SLO window: an event at exactly
``start`` happened before the maintenance, one at exactly ``end`` during it. An event of class
*C* on endpoint *E* known to the instant *t* (a probe's completion) is excluded when any window
covering *(C, E)* has an occurrence holding *t*; events known only to lie in a span *(a, b]* (a
scrape interval) are excluded together when the span overlaps an occurrence. Both engines use
this one rule: the store when it turns a probe run or a scrape interval into event slices
(:mod:`monitor.slo.slices`), the generated rules on each step's span through the occurrence
boundaries the exporter publishes (:func:`Maintenance.published`,
:func:`Maintenance.published_previous`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from dateutil.rrule import rrule, rrulestr

#: Class and endpoint a window applies to.
Target = tuple[str, str]
#: More than any zone's daylight-saving shift, in seconds.
_SLACK = 7200.0


@dataclass(frozen=True)
class Occurrence:
    """One run of a window over ``(start, end]`` (Unix seconds)."""

    window: str
    start: float
    end: float
    reason: str = ""

    def holds(self, t: float) -> bool:
        return self.start < t <= self.end


@dataclass(frozen=True)
class MaintenanceWindow:
    """One configured window: its first occurrence, its recurrence, and the (class, endpoint) pairs."""

    name: str
    first_start: dt.datetime  # timezone-aware; recurrences keep its wall-clock time
    seconds: float
    targets: frozenset[Target]
    rule_text: str | None = None
    reason: str = ""
    classes: tuple[str, ...] = ()  # as written, for listings
    endpoints: tuple[str, ...] = ()
    whole_classes: frozenset[str] = field(default_factory=frozenset)  # classes covered on every endpoint
    whole_endpoints: frozenset[str] = field(default_factory=frozenset)  # endpoints covered for every class

    @cached_property
    def _rule(self) -> rrule | None:
        if self.rule_text is None:
            return None
        rule = rrulestr(self.rule_text, dtstart=self.first_start, cache=True)
        assert isinstance(rule, rrule)  # no RDATE/EXRULE lines: one rule, never a set
        return rule

    def _local(self, t: float) -> dt.datetime:
        return dt.datetime.fromtimestamp(t, tz=self.first_start.tzinfo)

    def _occurrence(self, start: dt.datetime) -> Occurrence:
        s = start.timestamp()
        return Occurrence(self.name, s, s + self.seconds, self.reason)

    def _last_start_before(self, t: float) -> dt.datetime | None:
        """The last start strictly before instant ``t``. dateutil orders starts of one zone by wall
        clock, which is wrong in the hour repeated when clocks go back: so ask from two hours later
        and step back by real instants."""
        if self._rule is None:
            return self.first_start if self.first_start.timestamp() < t else None
        found: dt.datetime | None = self._rule.before(self._local(t + _SLACK), inc=False)
        while found is not None and found.timestamp() >= t:
            found = self._rule.before(found, inc=False)
        return found

    def _first_start_from(self, t: float) -> dt.datetime | None:
        """The first start at or after instant ``t`` (the same care as :meth:`_last_start_before`)."""
        if self._rule is None:
            return self.first_start if self.first_start.timestamp() >= t else None
        found: dt.datetime | None = self._rule.after(self._local(t - _SLACK), inc=True)
        while found is not None and found.timestamp() < t:
            found = self._rule.after(found, inc=False)
        return found

    def occurrence_at(self, t: float) -> Occurrence | None:
        """The occurrence holding instant ``t``, if any (occurrences never overlap)."""
        start = self._last_start_before(t)
        if start is None:
            return None
        occ = self._occurrence(start)
        return occ if occ.holds(t) else None

    def current_or_next(self, t: float) -> Occurrence | None:
        """The occurrence holding ``t``, else the next one to start, else None (all are over)."""
        held = self.occurrence_at(t)
        if held is not None:
            return held
        start = self._first_start_from(t)
        return self._occurrence(start) if start is not None else None

    def ended_before(self, t: float) -> Occurrence | None:
        """The last occurrence that ended before instant ``t`` (end < t), if any."""
        held = self.occurrence_at(t)
        start = self._last_start_before(held.start if held is not None else t)
        while start is not None:
            occ = self._occurrence(start)
            if occ.end < t:
                return occ
            start = self._last_start_before(start.timestamp())
        return None

    def between(self, since: float, until: float) -> list[Occurrence]:
        """Occurrences overlapping ``(since, until]``, in order."""
        out: list[Occurrence] = []
        occ = self.occurrence_at(since) or self.current_or_next(since)
        while occ is not None and occ.start < until:
            if occ.end > since:
                out.append(occ)
            start = self._first_start_from(occ.end + 1e-6) if self._rule is not None else None
            occ = self._occurrence(start) if start is not None else None
        return out


@dataclass(frozen=True)
class Maintenance:
    """Every configured window; answers which events are excluded and what to publish."""

    windows: tuple[MaintenanceWindow, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.windows)

    def excluding(
        self, request_class: str, endpoint: str, t: float, since: float | None = None
    ) -> str | None:
        """Name of a window excluding events of ``request_class`` on ``endpoint``, or None.

        An event known to the instant ``t`` (a probe's completion) is excluded when an occurrence
        holds ``t``; events known only to lie in ``(since, t]`` (a scrape interval) are excluded
        together when that span overlaps an occurrence, however little.
        """
        for w in self.windows:
            if (request_class, endpoint) not in w.targets:
                continue
            if since is None or since >= t:
                if w.occurrence_at(t) is not None:
                    return w.name
            elif w.between(since, t):
                return w.name
        return None

    def occurrences(self, since: float, until: float, request_class: str | None = None) -> list[Occurrence]:
        """Occurrences overlapping ``(since, until]`` (of windows touching ``request_class``), by start."""
        chosen = (w for w in self.windows if request_class is None or _touches(w, request_class))
        return sorted((o for w in chosen for o in w.between(since, until)), key=lambda o: (o.start, o.window))

    def published(self, t: float) -> Iterable[tuple[MaintenanceWindow, Target, Occurrence]]:
        """What the exporter publishes at ``t``: per window and target, its current or next occurrence."""
        for w in self.windows:
            occ = w.current_or_next(t)
            if occ is not None:
                for target in sorted(w.targets):
                    yield w, target, occ

    def published_previous(
        self, t: float, within: float
    ) -> Iterable[tuple[MaintenanceWindow, Target, Occurrence]]:
        """Per window and target, the occurrence that ended last, while it ended less than
        ``within`` seconds before ``t`` (rule steps whose span reaches back over its end)."""
        for w in self.windows:
            occ = w.ended_before(t)
            if occ is not None and t - occ.end <= within:
                for target in sorted(w.targets):
                    yield w, target, occ

    def window(self, name: str) -> MaintenanceWindow:
        for w in self.windows:
            if w.name == name:
                return w
        raise KeyError(name)


def _touches(window: MaintenanceWindow, request_class: str) -> bool:
    return any(c == request_class for c, _ in window.targets)
