"""Prometheus gauges of the latest SLO evaluations, for the monitor's exporter.

``m3mon_slo_attainment_ratio``, ``m3mon_slo_error_budget_remaining_ratio`` and
``m3mon_slo_burn_rate`` carry ``class, slo, sli, window``; ``m3mon_slo_objective_ratio`` carries
``class, slo, sli``. A window with no data is published as NaN (never as 1.0).
``m3mon_slo_time_to_exhaustion_seconds{window}`` (1h, 1d: :mod:`monitor.slo.exhaustion`) is +Inf
while the window burns nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Gauge

from monitor.conventions import (
    L_CLASS,
    L_SLI,
    L_SLO,
    L_WINDOW,
    SLO_ATTAINMENT,
    SLO_BUDGET_REMAINING,
    SLO_BURN_RATE,
    SLO_OBJECTIVE,
    SLO_TIME_TO_EXHAUSTION,
)
from monitor.slo.evaluate import SLOEvaluation
from monitor.slo.exhaustion import exhaustion

_WINDOW_LABELS = (L_CLASS, L_SLO, L_SLI, L_WINDOW)


def _value(v: float | None) -> float:
    return math.nan if v is None else v


class SLOMetrics:
    """Publishes the latest evaluation of each SLO as gauges on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.attainment = Gauge(
            SLO_ATTAINMENT,
            "Share of good events in the window (NaN: no data).",
            _WINDOW_LABELS,
            registry=registry,
        )
        self.budget = Gauge(
            SLO_BUDGET_REMAINING,
            "Error budget remaining: 1 - burn rate (can go negative).",
            _WINDOW_LABELS,
            registry=registry,
        )
        self.burn = Gauge(
            SLO_BURN_RATE,
            "Error ratio divided by the error budget (1 - objective).",
            _WINDOW_LABELS,
            registry=registry,
        )
        self.objective = Gauge(
            SLO_OBJECTIVE, "SLO objective as a ratio.", (L_CLASS, L_SLO, L_SLI), registry=registry
        )
        self.exhaustion = Gauge(
            SLO_TIME_TO_EXHAUSTION,
            "Seconds until the period's budget is spent at the window's burn (+Inf: none, NaN: no data).",
            _WINDOW_LABELS,
            registry=registry,
        )

    def update(self, evaluations: Iterable[SLOEvaluation]) -> None:
        """Set the gauges from evaluations; the latest instant per SLO wins."""
        latest: dict[str, SLOEvaluation] = {}
        for e in evaluations:
            if e.slo_id not in latest or e.evaluated_at >= latest[e.slo_id].evaluated_at:
                latest[e.slo_id] = e
        for e in latest.values():
            self.objective.labels(e.request_class, e.slo_name, e.sli).set(e.objective)
            for w in e.windows:
                labels = (e.request_class, e.slo_name, e.sli, w.window)
                self.attainment.labels(*labels).set(_value(w.attainment))
                self.budget.labels(*labels).set(_value(w.budget_remaining))
                self.burn.labels(*labels).set(_value(w.burn_rate))
            for window, seconds in exhaustion(e).by_window:
                self.exhaustion.labels(e.request_class, e.slo_name, e.sli, window).set(_value(seconds))
