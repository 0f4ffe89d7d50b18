"""The OTLP receiver's metrics: ``m3mon_otlp_spans_received_total{result}`` and the real-traffic
counters (``m3mon_traffic_*``, :mod:`monitor.slo.traffic`)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge

from monitor.conventions import (
    L_GOOD,
    L_PRIORITY,
    L_REASON,
    L_RESULT,
    L_TENANT,
    OTLP_IGNORED,
    OTLP_REJECTED,
    OTLP_SPANS_RECEIVED,
    OTLP_STORED,
    TENANTS_FOLDED_COUNTED,
    TRAFFIC_FOLDED_REQUESTS,
    TRAFFIC_LABELS,
    TRAFFIC_TENANT_CAP,
    TRAFFIC_TENANT_LABELS,
    TRAFFIC_TENANTS_FOLDED,
    TRAFFIC_TOTAL,
    TRAFFIC_UNROUTED,
)


class TraceMetrics:
    """Counts what arrived on ``/v1/traces``: stored and ignored spans, rejected request bodies."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.received = Counter(
            OTLP_SPANS_RECEIVED.removesuffix("_total"),
            "Spans received on /v1/traces by result: stored (llm_request and GenAI-convention spans), "
            "ignored (other spans), "
            "rejected (malformed request bodies, one per request).",
            [L_RESULT],
            registry=registry,
        )
        for result in (OTLP_STORED, OTLP_IGNORED, OTLP_REJECTED):
            self.received.labels(result)

    def accepted(self, stored: int, ignored: int) -> None:
        self.received.labels(OTLP_STORED).inc(stored)
        self.received.labels(OTLP_IGNORED).inc(ignored)

    def rejected(self) -> None:
        self.received.labels(OTLP_REJECTED).inc()


class TrafficMetrics:
    """Real requests judged for the ``source: traffic`` SLOs, and the tenant label cap at work."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            TRAFFIC_TOTAL.removesuffix("_total"),
            "Real requests (server spans in no probe's trace) by endpoint, class, tenant label, priority "
            "band and whether they met every latency limit of their class (good).",
            list(TRAFFIC_LABELS),
            registry=registry,
        )
        self.unrouted = Counter(
            TRAFFIC_UNROUTED.removesuffix("_total"),
            "Real requests no class could be given (no event of any traffic SLO), by why.",
            [L_REASON],
            registry=registry,
        )
        self.folded = Counter(
            TRAFFIC_FOLDED_REQUESTS.removesuffix("_total"),
            "Real requests counted under tenant 'other': their tenant has no label of its own.",
            registry=registry,
        )
        self.tenants_folded = Gauge(
            TRAFFIC_TENANTS_FOLDED,
            f"Distinct tenant ids folded into 'other' (counted up to {TENANTS_FOLDED_COUNTED}).",
            registry=registry,
        )
        self.tenant_labels = Gauge(
            TRAFFIC_TENANT_LABELS, "Tenant label values in use (named, busiest, 'other').", registry=registry
        )
        self.tenant_cap = Gauge(
            TRAFFIC_TENANT_CAP, "Most tenant label values there can be: named + top + 1.", registry=registry
        )
        self._folded_seen = 0

    def prepare(self, series: Iterable[tuple[str, str, str, str]]) -> None:
        """Publish these (endpoint, class, tenant, band) series at 0, good and bad, before any
        request: the rules count a rise from a sample they saw, never a series' first value."""
        for endpoint, request_class, tenant, band in series:
            for good in ("true", "false"):
                self.requests.labels(endpoint, request_class, tenant, band, good)

    def observe(self, judged: Iterable[tuple[str, str, dict[str, str]]], unrouted: dict[str, int]) -> None:
        """Count each (endpoint, class, labels) request and the unrouted ones."""
        for endpoint, request_class, labels in judged:
            tenant, band, good = labels[L_TENANT], labels[L_PRIORITY], labels[L_GOOD]
            self.requests.labels(endpoint, request_class, tenant, band, good).inc()
        for reason, n in unrouted.items():
            self.unrouted.labels(reason).inc(n)

    def tenants(self, cap: int, in_use: int, folded_ids: int, folded_requests: int) -> None:
        """Publish the tenant labels' state (``folded_requests``: the running total)."""
        self.tenant_cap.set(cap)
        self.tenant_labels.set(in_use)
        self.tenants_folded.set(folded_ids)
        self.folded.inc(max(0, folded_requests - self._folded_seen))
        self._folded_seen = max(self._folded_seen, folded_requests)
