"""The store's own metrics: backlog of buffered writes, failed write attempts, dead letters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge

from monitor.conventions import DEAD_LETTER_REASONS, STORE_BACKLOG, STORE_DEAD_LETTERS, STORE_WRITE_ERRORS

if TYPE_CHECKING:
    from monitor.store.buffer import BufferedWriter


class StoreMetrics:
    """``m3mon_store_backlog_items`` (read live from the writer), ``m3mon_store_write_errors_total`` and
    ``m3mon_store_dead_letters_total{reason}``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.backlog = Gauge(
            STORE_BACKLOG, "Store writes buffered while the database is unreachable.", registry=registry
        )
        self.write_errors = Counter(
            STORE_WRITE_ERRORS.removesuffix("_total"),
            "Failed store write attempts (each retry counts).",
            registry=registry,
        )
        self.dead_letters = Counter(
            STORE_DEAD_LETTERS.removesuffix("_total"),
            "Store ops set aside in the dead-letter file because they failed on their own, by reason.",
            ["reason"],
            registry=registry,
        )
        for reason in DEAD_LETTER_REASONS:  # from 0, so the first dead letter shows as an increase
            self.dead_letters.labels(reason)

    def dead_letter(self, reason: str) -> None:
        self.dead_letters.labels(reason if reason in DEAD_LETTER_REASONS else "other").inc()

    def track(self, writer: BufferedWriter) -> None:
        self.backlog.set_function(lambda: float(writer.backlog))
