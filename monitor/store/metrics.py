"""The store's own metrics: backlog of buffered writes, failed write attempts, dead letters."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge

from monitor.conventions import (
    DEAD_LETTER_REASONS,
    READING_RESULTS,
    STORE_BACKLOG,
    STORE_DEAD_LETTERS,
    STORE_READINGS,
    STORE_SCRAPE_GAPS,
    STORE_WRITE_ERRORS,
)

if TYPE_CHECKING:
    from monitor.store.buffer import BufferedWriter
    from monitor.store.ops import Applied


class StoreMetrics:
    """``m3mon_store_backlog_items`` (read live from the writer), ``m3mon_store_write_errors_total``,
    ``m3mon_store_dead_letters_total{reason}``, ``m3mon_store_readings_total{result}`` and
    ``m3mon_store_scrape_gaps_total``."""

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
        self.readings = Counter(
            STORE_READINGS.removesuffix("_total"),
            "Scrape readings this replica wrote, by result: new (kept: its intervals derived), "
            "duplicate (its slot was stored already, e.g. by the pair partner), late (it fell in an "
            "interval whose first reading is no longer kept).",
            ["result"],
            registry=registry,
        )
        for result in READING_RESULTS:
            self.readings.labels(result)
        self.gaps = Counter(
            STORE_SCRAPE_GAPS.removesuffix("_total"),
            "Intervals between two stored readings of an endpoint too long to count (over the scrape gap "
            "limit): their events count in no SLI.",
            registry=registry,
        )

    def dead_letter(self, reason: str) -> None:
        self.dead_letters.labels(reason if reason in DEAD_LETTER_REASONS else "other").inc()

    def applied(self, done: Iterable[Applied]) -> None:
        for a in done:
            if a.reading is not None:
                self.readings.labels(a.reading).inc()
            if a.gaps:
                self.gaps.inc(a.gaps)

    def track(self, writer: BufferedWriter) -> None:
        self.backlog.set_function(lambda: float(writer.backlog))
