"""The store's own metrics: backlog of buffered writes and failed write attempts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge

from monitor.conventions import STORE_BACKLOG, STORE_WRITE_ERRORS

if TYPE_CHECKING:
    from monitor.store.buffer import BufferedWriter


class StoreMetrics:
    """``m3mon_store_backlog_items`` (read live from the writer) and ``m3mon_store_write_errors_total``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.backlog = Gauge(
            STORE_BACKLOG, "Store writes buffered while the database is unreachable.", registry=registry
        )
        self.write_errors = Counter(
            STORE_WRITE_ERRORS.removesuffix("_total"),
            "Failed store write attempts (each retry counts).",
            registry=registry,
        )

    def track(self, writer: BufferedWriter) -> None:
        self.backlog.set_function(lambda: float(writer.backlog))
