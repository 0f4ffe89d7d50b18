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
    L_FAMILY,
    L_REASON,
    L_REPLACEMENT,
    L_STATUS,
    METRIC_FAMILY_SERVED,
    SCRAPE_DURATION,
    SCRAPE_ERROR_REASONS,
    SCRAPE_ERRORS,
    SCRAPE_SUCCESS,
)
from monitor.scrape.drift import Drift
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
        self.family_served = Gauge(
            METRIC_FAMILY_SERVED,
            "1 if a family the endpoint's rules, SLOs or dashboards read is on its page, else 0; status "
            "says why (served, flag, renamed, removed, absent, label), replacement names the other name.",
            [L_ENDPOINT, L_FAMILY, L_STATUS, L_REPLACEMENT],
            registry=registry,
        )
        self._drift_children: dict[str, set[tuple[str, str, str, str]]] = {}
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

    def set_drift(self, endpoint: str, drifts: tuple[Drift, ...]) -> None:
        """Publish the endpoint's needs as judged on its last page; a need whose status changed
        loses its old series (so the alert sees the family go from served to not served)."""
        now = {(endpoint, d.family, d.status, d.replacement or "") for d in drifts}
        for gone in self._drift_children.get(endpoint, set()) - now:
            self.family_served.remove(*gone)
        for d in drifts:
            self.family_served.labels(endpoint, d.family, d.status, d.replacement or "").set(
                1 if d.served else 0
            )
        self._drift_children[endpoint] = now

    def forget_drift(self, endpoint: str) -> None:
        for gone in self._drift_children.pop(endpoint, set()):
            self.family_served.remove(*gone)
