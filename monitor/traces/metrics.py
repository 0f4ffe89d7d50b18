"""The OTLP receiver's metric: ``m3mon_otlp_spans_received_total{result}``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from monitor.conventions import L_RESULT, OTLP_IGNORED, OTLP_REJECTED, OTLP_SPANS_RECEIVED, OTLP_STORED


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
