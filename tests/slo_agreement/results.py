"""What each of the three evaluators says about a scenario, in one shape so they can be compared.

Tolerance: ratios and attainment agree within 1e-9 absolute; burn rates and budget remaining
within 1e-9 × max(1, |value|) (a 99.99 % SLO divides by 1e-4, and the generated rules write the
budget as a 6-digit literal, e.g. ``0.0001`` where Python's ``1 - 0.9999`` is 9.9999999999989e-05).
With scrapes and evaluations on the same whole minutes, every source counts the same events,
so anything larger is a real disagreement. "No data" must be ``None`` everywhere (never NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

BURN_PAGE = "SLOErrorBudgetBurnPage"
BURN_TICKET = "SLOErrorBudgetBurnTicket"
EXHAUSTED = "SLOErrorBudgetExhausted"
ABSENT = "SLOMetricAbsent"
NOT_EDGE = "SLOThresholdNotBucketEdge"
SLO_ALERTS = (BURN_PAGE, BURN_TICKET, EXHAUSTED, ABSENT, NOT_EDGE)
#: The alerts the store can state (it has no notion of absent metrics or bucket edges).
STORE_ALERTS = (BURN_PAGE, BURN_TICKET, EXHAUSTED)

RATIO_TOLERANCE = 1e-9


@dataclass(frozen=True)
class WindowReading:
    """One window: error ratio, attainment and burn rate (all None when it holds no valid event)."""

    ratio: float | None
    attainment: float | None
    burn: float | None


@dataclass(frozen=True)
class Reading:
    """Every window of the SLO at one minute, plus the error budget remaining over the period."""

    windows: dict[str, WindowReading]
    budget_remaining: float | None


@dataclass
class Outcome:
    """One evaluator's view of a scenario: readings at check minutes, firing alerts every minute."""

    source: str
    readings: dict[int, Reading] = field(default_factory=dict)
    firing: dict[int, frozenset[str]] = field(default_factory=dict)
    alerts: tuple[str, ...] = SLO_ALERTS
    status: dict[int, str] = field(default_factory=dict)  # the store's stored status ("burning/page")

    def first_fire(self, alert: str) -> int | None:
        return next((m for m in sorted(self.firing) if alert in self.firing[m]), None)


def expected_status(reading: Reading, firing: frozenset[str]) -> str:
    """The status docs/store-and-slo.md derives: no data, exhausted, burning/<severity>, ok."""
    if reading.budget_remaining is None:
        return "no data"
    if EXHAUSTED in firing:
        return "exhausted"
    if BURN_PAGE in firing:
        return "burning/page"
    return "burning/ticket" if BURN_TICKET in firing else "ok"


def close(a: float | None, b: float | None, scale: bool = False) -> bool:
    """Equal within the tolerance above; None only equals None; NaN equals nothing."""
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return False
    bound = RATIO_TOLERANCE * (max(1.0, abs(a), abs(b)) if scale else 1.0)
    return abs(a - b) <= bound


def reading_from_ratios(ratios: dict[str, float | None], budget: float, remaining: float | None) -> Reading:
    """A reading from error ratios alone (attainment = 1 − ratio, burn = ratio / budget)."""
    windows = {
        w: WindowReading(r, None if r is None else 1.0 - r, None if r is None else r / budget)
        for w, r in ratios.items()
    }
    return Reading(windows, remaining)
