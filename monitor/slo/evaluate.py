"""Attainment, remaining error budget, burn rate and status of an SLO at one instant.

Per window, from good and total events (bad = total − good):

* attainment = good / total;
* burn rate = (bad / total) / (1 − objective): 1 spends the budget exactly over the period;
* error budget remaining = 1 − burn rate, i.e. 1 − (bad/total)/(1 − objective); it goes
  negative once more errors happened than the objective allows (−1 means twice the budget);
* a window with no events has all three as ``None`` ("no data"), never 100 %.

Status of the SLO at the instant, first match wins:

1. ``no data``: no events in the SLO period;
2. ``exhausted``: budget remaining in the period ``<= 0``;
3. ``burning``: one of :data:`monitor.conventions.BURN_ALERTS` holds — burn rate above the
   alert's factor (14.4 for 1h/5m over 30d) in both its long and its short window, and the long
   window holds at least :func:`monitor.slo.guard.min_events` valid events (one failure in a
   quiet hour cannot page); ``severity`` says whether a page- or only a ticket-level condition
   holds;
4. ``ok``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from monitor.conventions import BURN_ALERTS, BurnAlert
from monitor.model import SLO
from monitor.slo import burn
from monitor.slo.guard import min_events
from monitor.slo.slices import EventSlice
from monitor.slo.windows import Window, windows_at

STATUS_OK = "ok"
STATUS_BURNING = "burning"
STATUS_EXHAUSTED = "exhausted"
STATUS_NO_DATA = "no data"
STATUSES = (STATUS_OK, STATUS_BURNING, STATUS_EXHAUSTED, STATUS_NO_DATA)

#: ``counts(slo_id, start, end) -> (good, total)`` over slices ending in ``(start, end]``.
Counter = Callable[[str, float, float], tuple[float, float]]


@dataclass(frozen=True)
class WindowResult:
    """One window's numbers; the ratios are None when the window has no events."""

    window: str
    start: float
    end: float
    good: float
    total: float
    attainment: float | None
    budget_remaining: float | None
    burn_rate: float | None


@dataclass(frozen=True)
class SLOEvaluation:
    """Every window of one SLO at one instant, with the resulting status."""

    slo_id: str
    request_class: str
    slo_name: str
    sli: str
    objective: float
    evaluated_at: float
    windows: tuple[WindowResult, ...]
    status: str
    severity: str | None = None  # "page" / "ticket" while burning

    def window(self, name: str) -> WindowResult | None:
        return next((w for w in self.windows if w.window == name), None)


def window_result(slo: SLO, window: Window, good: float, total: float) -> WindowResult:
    """The ratios of one window from its good and total event counts."""
    return _result(slo.budget, window, good, total)


def _result(budget: float, window: Window, good: float, total: float) -> WindowResult:
    """:func:`window_result` for an SLO whose allowed error ratio is ``budget``."""
    if total <= 0:
        return WindowResult(window.name, window.start, window.end, good, total, None, None, None)
    error_ratio = (total - good) / total
    burn = error_ratio / budget
    return WindowResult(window.name, window.start, window.end, good, total, good / total, 1.0 - burn, burn)


def status_of(slo: SLO, results: Iterable[WindowResult]) -> tuple[str, str | None]:
    """(status, severity) from an SLO's window results; see the module docstring."""
    by_name = {r.window: r for r in results}
    period = by_name.get(slo.period_window)
    if period is None or period.budget_remaining is None:
        return STATUS_NO_DATA, None
    if period.budget_remaining <= 0:
        return STATUS_EXHAUSTED, None
    alerts = _fired(slo, by_name)
    if alerts:  # page conditions come first in BURN_ALERTS
        return STATUS_BURNING, alerts[0].severity
    return STATUS_OK, None


@lru_cache(maxsize=65536)
def _conditions(slo: SLO) -> tuple[tuple[BurnAlert, float, int], ...]:
    """Each burn condition of ``slo`` with its error-ratio threshold and its events guard (the
    same at every instant: computed once per SLO, not once per evaluation)."""
    return tuple((alert, burn.threshold(slo, alert), min_events(slo, alert)) for alert in BURN_ALERTS)


def burn_alerts(slo: SLO, results: Iterable[WindowResult]) -> list[BurnAlert]:
    """The multi-window burn-rate conditions (SRE Workbook) that ``results`` satisfy, pages first."""
    return _fired(slo, {r.window: r for r in results})


def _fired(slo: SLO, by_name: Mapping[str, WindowResult]) -> list[BurnAlert]:
    """:func:`burn_alerts` of results by window name."""
    fired = []
    for alert, threshold, guard in _conditions(slo):
        long_w, short_w = by_name.get(alert.long_window), by_name.get(alert.short_window)
        ratios = [_error_ratio(w) for w in (long_w, short_w)]
        enough = long_w is not None and long_w.total >= guard
        if enough and all(r is not None and r > threshold for r in ratios):
            fired.append(alert)
    return fired


def _error_ratio(w: WindowResult | None) -> float | None:
    """bad / valid of a window, as the rules compute it (None without events)."""
    if w is None or w.total <= 0:
        return None
    return (w.total - w.good) / w.total


def evaluate_counts(slo: SLO, at: float, counts: Counter) -> SLOEvaluation:
    """Evaluate every window of ``slo`` at ``at``, asking ``counts`` for each window's events."""
    slo_id, budget = slo.id, slo.budget
    results = tuple(_result(budget, w, *counts(slo_id, w.start, w.end)) for w in windows_at(slo, at))
    status, severity = status_of(slo, results)
    return SLOEvaluation(
        slo_id, slo.request_class, slo.name, slo.sli, slo.objective, at, results, status, severity
    )


def slice_counter(slices: Iterable[EventSlice]) -> Counter:
    """A :data:`Counter` over an in-memory list of slices (window membership by slice end; slices
    excluded by maintenance count nowhere)."""
    items = list(slices)

    def counts(slo_id: str, start: float, end: float) -> tuple[float, float]:
        chosen = [s for s in items if s.slo_id == slo_id and start < s.end <= end and not s.maintenance]
        return sum(s.good for s in chosen), sum(s.total for s in chosen)

    return counts


def evaluate_slices(slo: SLO, slices: Iterable[EventSlice], at: float) -> SLOEvaluation:
    """Evaluate ``slo`` at ``at`` from a list of event slices (pure; used by tests and tools)."""
    return evaluate_counts(slo, at, slice_counter(slices))
