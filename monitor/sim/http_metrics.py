"""The ``http_*`` families vLLM exposes through prometheus-fastapi-instrumentator (its default set)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, Summary

#: Handlers the instrumentator excludes in vLLM, plus the simulator's own ``/sim/*`` endpoints.
EXCLUDED = frozenset({"/metrics", "/health", "/load", "/ping", "/version", "/server_info"})
HIGHR_BUCKETS = [
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    1.5,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5.0,
    7.5,
    10.0,
    30.0,
    60.0,
]


class HttpMetrics:
    """``http_requests_total``, request/response size summaries and the two duration histograms."""

    def __init__(self, r: CollectorRegistry) -> None:
        self.requests = Counter(
            "http_requests",
            "Total number of requests by method, status and handler.",
            ["method", "status", "handler"],
            registry=r,
        )
        self.request_size = Summary(
            "http_request_size_bytes",
            "Content length of incoming requests by handler. Only value of header is respected. "
            "Otherwise ignored. No percentile calculated. ",
            ["handler"],
            registry=r,
        )
        self.response_size = Summary(
            "http_response_size_bytes",
            "Content length of outgoing responses by handler. Only value of header is respected. "
            "Otherwise ignored. No percentile calculated. ",
            ["handler"],
            registry=r,
        )
        self.highr = Histogram(
            "http_request_duration_highr_seconds",
            "Latency with many buckets but no API specific labels. Made for more accurate percentile "
            "calculations. ",
            buckets=HIGHR_BUCKETS,
            registry=r,
        )
        self.duration = Histogram(
            "http_request_duration_seconds",
            "Latency with only few buckets by handler. Made to be only used if aggregation by handler "
            "is important. ",
            ["handler", "method"],
            buckets=[0.1, 0.5, 1.0],
            registry=r,
        )

    def observe(
        self, handler: str, method: str, status: int, req_size: int, resp_size: int, secs: float
    ) -> None:
        """Record one finished HTTP exchange (status grouped as ``2xx``/``4xx``/``5xx``)."""
        if handler in EXCLUDED or handler.startswith("/sim/") or handler == "/sim":
            return
        self.requests.labels(method, f"{status // 100}xx", handler).inc()
        self.request_size.labels(handler).observe(req_size)
        self.response_size.labels(handler).observe(resp_size)
        self.highr.observe(secs)
        self.duration.labels(handler, method).observe(secs)
