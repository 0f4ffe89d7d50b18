"""The windows an SLO is evaluated over at one instant.

A window is the half-open interval ``(start, end]`` on slice *end* times: an event slice counts
in a window when ``start < slice.end <= end``. A slice ending exactly at the evaluation instant
counts; one ending exactly at the window's start belongs to the window before. For calendar
windows this means a scrape interval ending at Monday 00:00 UTC belongs to the previous week,
which is where its events happened.

Windows: the rolling windows of :data:`monitor.conventions.ROLLING_WINDOWS`, the SLO period
(``30d`` or ``28d``), the ISO calendar week (from Monday 00:00 UTC) and the calendar month (from
the 1st, 00:00 UTC).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from monitor.conventions import CALENDAR_WINDOWS, ROLLING_WINDOWS
from monitor.model import SLO

WEEK, MONTH = CALENDAR_WINDOWS


@dataclass(frozen=True)
class Window:
    """One evaluation window ``(start, end]`` in Unix seconds, named like ``1h``, ``30d``, ``week``."""

    name: str
    start: float
    end: float
    rolling: bool = True

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def contains(self, t: float) -> bool:
        """Whether an event slice ending at ``t`` counts in this window."""
        return self.start < t <= self.end


def week_start(at: float) -> float:
    """Monday 00:00 UTC of the ISO week holding ``at`` (an instant exactly at Monday 00:00 starts it)."""
    d = datetime.fromtimestamp(at, UTC)
    monday = (d - timedelta(days=d.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    return monday.timestamp()


def month_start(at: float) -> float:
    """The 1st of the month holding ``at``, 00:00 UTC."""
    d = datetime.fromtimestamp(at, UTC)
    return d.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def rolling_window_names(slo: SLO) -> tuple[str, ...]:
    """Rolling windows of an SLO, shortest first, ending with its period."""
    names = [name for name, _ in ROLLING_WINDOWS]
    if slo.period_window not in names:
        names.append(slo.period_window)
    return tuple(names)


def rolling_lengths(slos: Iterable[SLO]) -> frozenset[float]:
    """The lengths in seconds of every rolling window (the periods too) of ``slos``."""
    return frozenset({float(secs) for _, secs in ROLLING_WINDOWS} | {float(s.period) for s in slos})


def windows_at(slo: SLO, at: float) -> tuple[Window, ...]:
    """Every window of ``slo`` ending at ``at``: rolling ones, the period, then week and month."""
    return _windows_at(slo.period_window, slo.period, at)


@lru_cache(maxsize=256)
def _windows_at(period_window: str, period: float, at: float) -> tuple[Window, ...]:
    """:func:`windows_at` by what it depends on (every SLO of a period shares them at a step)."""
    out = [Window(name, at - secs, at) for name, secs in ROLLING_WINDOWS]
    if period_window not in {w.name for w in out}:
        out.append(Window(period_window, at - period, at))
    out.append(Window(WEEK, week_start(at), at, rolling=False))
    out.append(Window(MONTH, month_start(at), at, rolling=False))
    return tuple(out)


def align(at: float, step: float) -> float:
    """The latest step boundary at or before ``at`` (e.g. the minute for ``step=60``)."""
    return (at // step) * step
