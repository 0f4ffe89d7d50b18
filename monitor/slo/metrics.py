"""Prometheus gauges of the latest SLO evaluations, for the monitor's exporter.

``m3mon_slo_attainment_ratio``, ``m3mon_slo_error_budget_remaining_ratio`` and
``m3mon_slo_burn_rate`` carry ``class, slo, sli, window``; ``m3mon_slo_objective_ratio`` carries
``class, slo, sli``. A window with no data has no series (never NaN, never 1.0): a panel or
rule reading it sees "no data", as with the generated records.
``m3mon_slo_time_to_exhaustion_seconds{window}`` (1h, 1d: :mod:`monitor.slo.exhaustion`) is +Inf
while the window burns nothing, and has no series without data.
"""

from __future__ import annotations

import contextlib
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


def _publish(gauge: Gauge, labels: tuple[str, ...], value: float | None) -> None:
    """Set the child of ``labels`` to ``value``; without a value (no data) remove it."""
    if value is not None and not math.isnan(value):
        gauge.labels(*labels).set(value)
        return
    with contextlib.suppress(KeyError):  # never published, or already removed
        gauge.remove(*labels)


class SLOMetrics:
    """Publishes the latest evaluation of each SLO as gauges on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.attainment = Gauge(
            SLO_ATTAINMENT,
            "Share of good events in the window (no series: no data).",
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
            "Seconds until the period's budget is spent at the window's burn "
            "(+Inf: none; no series: no data).",
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
                _publish(self.attainment, labels, w.attainment)
                _publish(self.budget, labels, w.budget_remaining)
                _publish(self.burn, labels, w.burn_rate)
            for window, seconds in exhaustion(e).by_window:
                _publish(self.exhaustion, (e.request_class, e.slo_name, e.sli, window), seconds)
