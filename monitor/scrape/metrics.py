"""The monitor's own metrics about scraping (not the scraped series: raw vLLM series are never re-exported).

``m3mon_scrape_success{endpoint}`` (1/0), ``m3mon_scrape_duration_seconds{endpoint}``,
``m3mon_scrape_errors_total{endpoint,reason}`` and ``m3mon_deployment_info{endpoint,...}``
(names in :mod:`monitor.conventions`). The exporter composes this onto its registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from monitor.conventions import (
    DEPLOYMENT_INFO,
    L_ENDPOINT,
    L_REASON,
    SCRAPE_DURATION,
    SCRAPE_ERROR_REASONS,
    SCRAPE_ERRORS,
    SCRAPE_SUCCESS,
)
from monitor.scrape.fingerprint import Fingerprint

SCRAPE_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ScrapeMetrics:
    """Scrape health per endpoint, registered on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.success = Gauge(
            SCRAPE_SUCCESS,
            "1 if the last scrape of the endpoint succeeded, else 0.",
            [L_ENDPOINT],
            registry=registry,
        )
        self.duration = Histogram(
            SCRAPE_DURATION,
            "Duration of scrapes of the endpoint's /metrics page, successful or not.",
            [L_ENDPOINT],
            buckets=SCRAPE_DURATION_BUCKETS,
            registry=registry,
        )
        self.errors = Counter(
            SCRAPE_ERRORS.removesuffix("_total"),
            "Failed scrapes by reason (one of monitor.conventions.SCRAPE_ERROR_REASONS).",
            [L_ENDPOINT, L_REASON],
            registry=registry,
        )
        self.deployment = Info(
            DEPLOYMENT_INFO.removesuffix("_info"),
            "Deployment fingerprint of the endpoint (server, version, KV-cache configuration).",
            [L_ENDPOINT],
            registry=registry,
        )

    def start(self, endpoint: str) -> None:
        """Create the endpoint's series at zero, so error counters exist before the first error."""
        for reason in SCRAPE_ERROR_REASONS:
            self.errors.labels(endpoint, reason)
        self.success.labels(endpoint)

    def observe(self, endpoint: str, duration: float, error_reason: str | None = None) -> None:
        """Record one scrape: its duration and, on failure, its reason."""
        self.duration.labels(endpoint).observe(max(0.0, duration))
        self.success.labels(endpoint).set(0.0 if error_reason else 1.0)
        if error_reason:
            self.errors.labels(endpoint, error_reason).inc()

    def set_fingerprint(self, endpoint: str, fingerprint: Fingerprint) -> None:
        self.deployment.labels(endpoint).info(fingerprint.info_labels())
