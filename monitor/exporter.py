"""The monitor's own Prometheus exporter: one registry composed of every stage's metric set.

Each stage defines its own metrics next to its code (:mod:`monitor.scrape.metrics`,
:mod:`monitor.probes.metrics`, :mod:`monitor.slo.metrics`, :mod:`monitor.store.metrics`,
:mod:`monitor.traces.metrics`, :mod:`monitor.service.metrics`); this module puts them in one
:class:`~prometheus_client.CollectorRegistry` with the process, GC and platform collectors of
``prometheus_client`` and adds the endpoint health gauge and the maintenance boundaries
(:mod:`monitor.maintenance.metrics`). Raw vLLM series are never re-exported:
Prometheus scrapes vLLM itself.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Gauge,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.openmetrics import exposition as openmetrics

from monitor.bottleneck.metrics import BottleneckMetrics
from monitor.conventions import HEALTH_UP, L_ENDPOINT, TENANT_OTHER
from monitor.maintenance.metrics import MaintenanceCollector
from monitor.model import Model
from monitor.probes.genai_metrics import GenAIMetrics
from monitor.probes.metrics import ProbeMetrics, targets
from monitor.scrape.gpu_metrics import GpuMetrics
from monitor.scrape.metrics import ScrapeMetrics
from monitor.service.metrics import ServiceMetrics
from monitor.service.request_metrics import RequestMetrics
from monitor.slo.metrics import SLOMetrics
from monitor.slo.probe_goodput import judge
from monitor.store.metrics import StoreMetrics
from monitor.traces.metrics import TraceMetrics, TrafficMetrics


class Exporter:
    """Every metric m3mon publishes, in one registry."""

    def __init__(self, model: Model) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.model = model
        self.scrape = ScrapeMetrics(self.registry)
        self.gpu = GpuMetrics(self.registry)
        self.probes = ProbeMetrics.for_model(self.registry, model, judge(model))
        self.genai = GenAIMetrics.for_model(
            model
        )  # OTLP GenAI client metrics (exporter.otlp_metrics_endpoint)
        self.probes.genai = self.genai
        self.slo = SLOMetrics(self.registry)
        self.store = StoreMetrics(self.registry)
        self.traces = TraceMetrics(self.registry)
        self.traffic = TrafficMetrics(self.registry)
        self.traffic.prepare(traffic_series(model))
        self.service = ServiceMetrics(self.registry)
        self.bottleneck = BottleneckMetrics(self.registry)
        self.requests = RequestMetrics(self.registry)
        self.health_up = Gauge(
            HEALTH_UP,
            "1 when the endpoint's /health answered 200 at the last check, else 0.",
            [L_ENDPOINT],
            registry=self.registry,
        )
        self.registry.register(MaintenanceCollector(lambda: self.model.maintenance))

    def apply(self, model: Model) -> None:
        """Follow a reloaded configuration: probe series for its targets and buckets, no stale series.

        When the probe targets or the latency buckets change, the probe families are rebuilt
        (their counters restart at 0, which Prometheus reads as a counter reset).
        """
        old, self.model = self.model, model
        if targets(old) != targets(model) or old.latency_buckets() != model.latency_buckets():
            for collector in vars(self.probes).values():
                if isinstance(collector, MetricWrapperBase):
                    self.registry.unregister(collector)
            self.probes = ProbeMetrics.for_model(self.registry, model, judge(model))
        self.probes.judge = judge(model)  # goodput limits follow the reloaded SLOs
        if old.otlp_metrics != model.otlp_metrics or old.endpoints != model.endpoints:
            if self.genai is not None:
                self.genai.shutdown()
            self.genai = GenAIMetrics.for_model(model)
        self.probes.genai = self.genai
        self.traffic.prepare(traffic_series(model))
        for gone in {e.name for e in old.endpoints} - {e.name for e in model.endpoints}:
            gauges = (self.health_up, self.scrape.success, self.gpu.success, self.gpu.eviction_before_reuse)
            for gauge in gauges:
                if (gone,) in _children(gauge):
                    gauge.remove(gone)
            self.gpu.forget(gone)
        for gone_class in {c.name for c in old.classes} - {c.name for c in model.classes}:
            self.bottleneck.forget(gone_class)
        if old.slos != model.slos:
            for gauge in (
                self.slo.attainment,
                self.slo.budget,
                self.slo.burn,
                self.slo.objective,
                self.slo.exhaustion,
            ):
                gauge.clear()  # the next evaluation publishes the new set

    def render(self) -> bytes:
        """The exposition text (Prometheus text format 0.0.4)."""
        return generate_latest(self.registry)

    def render_for(self, accept: str) -> tuple[bytes, str]:
        """The exposition and its content type for a scraper's ``Accept`` header: OpenMetrics when
        it asks for it (Prometheus does by default), which carries the probe histograms' exemplars
        (each bucket's latest trace id), else the Prometheus text format 0.0.4."""
        if "application/openmetrics-text" in accept:
            text: bytes = openmetrics.generate_latest(self.registry)  # type: ignore[no-untyped-call]
            return text, openmetrics.CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def traffic_series(model: Model) -> Iterator[tuple[str, str, str, str]]:
    """The (endpoint, class, tenant, band) series of real traffic the SLOs of ``model`` read: every
    named tenant and ``other``, every band, of each class with a ``source: traffic`` SLO."""
    classes = {s.request_class for s in model.slos if s.source == "traffic"}
    tenants = (*model.traffic.tenants, TENANT_OTHER)
    bands = tuple(b for b, _ in model.traffic.priority_bands) or (model.traffic.band(None),)
    for e in model.endpoints:
        for cls in (c for c in e.classes if c in classes):
            yield from ((e.name, cls, t, b) for t in tenants for b in bands)


def _children(gauge: Gauge) -> set[tuple[str, ...]]:
    return {tuple(sample.labels.values()) for metric in gauge.collect() for sample in metric.samples}
