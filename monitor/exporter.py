"""The monitor's own Prometheus exporter: one registry composed of every stage's metric set.

Each stage defines its own metrics next to its code (:mod:`monitor.scrape.metrics`,
:mod:`monitor.probes.metrics`, :mod:`monitor.slo.metrics`, :mod:`monitor.store.metrics`,
:mod:`monitor.traces.metrics`); this module puts them in one
:class:`~prometheus_client.CollectorRegistry` and adds the endpoint health gauge. Raw vLLM
series are never re-exported: Prometheus scrapes vLLM itself.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from monitor.conventions import HEALTH_UP, L_ENDPOINT
from monitor.model import Model
from monitor.probes.metrics import ProbeMetrics
from monitor.scrape.metrics import ScrapeMetrics
from monitor.slo.metrics import SLOMetrics
from monitor.store.metrics import StoreMetrics
from monitor.traces.metrics import TraceMetrics


class Exporter:
    """Every metric m3mon publishes, in one registry."""

    def __init__(self, model: Model) -> None:
        self.registry = CollectorRegistry()
        self.scrape = ScrapeMetrics(self.registry)
        self.probes = ProbeMetrics.for_model(self.registry, model)
        self.slo = SLOMetrics(self.registry)
        self.store = StoreMetrics(self.registry)
        self.traces = TraceMetrics(self.registry)
        self.health_up = Gauge(
            HEALTH_UP,
            "1 when the endpoint's /health answered 200 at the last check, else 0.",
            [L_ENDPOINT],
            registry=self.registry,
        )

    def render(self) -> bytes:
        """The exposition text (Prometheus text format 0.0.4)."""
        return generate_latest(self.registry)
