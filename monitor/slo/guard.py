"""The low-traffic guard of the burn-rate alerts: how many events a long window must hold.

A burn-rate condition fires when the error ratio in its long *and* short window exceeds
``factor × budget`` (14.4 × 0.1 % for a 99.9 % SLO's 1h/5m page). With ``N`` valid events in
the long window, one bad event alone is an error ratio of ``1/N``; it exceeds the threshold
whenever ``N < 1 / (factor × budget)``. So by default a condition may fire only once its long
window holds at least ``ceil(1 / (factor × budget))`` valid events: one failure in a quiet hour
cannot page (SRE Workbook, "Alerting on SLOs", low-traffic services). An SLO may set its own
``min_events`` (config ``slos[].min_events``), which then applies to every burn condition.

The generated rules (``and …:increase<long> >= N``) and the stored evaluation
(:func:`monitor.slo.evaluate.burn_alerts`) both read :func:`min_events`.
"""

from __future__ import annotations

import math

from monitor.conventions import BurnAlert, window_seconds
from monitor.model import SLO
from monitor.slo import burn


def default_min_events(factor: float, budget: float) -> int:
    """Fewest valid events for which a single bad one stays at or below ``factor × budget``."""
    threshold = factor * budget
    if threshold >= 1.0:
        return 1
    return max(1, math.ceil(1.0 / threshold - 1e-9))


def min_events(slo: SLO, alert: BurnAlert) -> int:
    """The guard of one burn condition of ``slo``: its override, else the derived default."""
    if slo.min_events is not None:
        return slo.min_events
    return default_min_events(burn.factor(slo, alert), slo.budget)


def events_needed_per_hour(slo: SLO, alert: BurnAlert) -> float:
    """The event rate (per hour) that fills ``alert``'s long window up to its guard."""
    return min_events(slo, alert) * 3600.0 / window_seconds(alert.long_window)
