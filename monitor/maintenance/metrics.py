"""The maintenance boundaries the monitor publishes for the generated rules.

Per window and (class, endpoint) it covers: ``m3mon_maintenance_start_timestamp_seconds`` and
``m3mon_maintenance_end_timestamp_seconds`` of the occurrence holding the scrape instant, else of
the next one (nothing once none remains), and ``m3mon_maintenance_previous_start_timestamp_seconds``
/ ``..._previous_end_...`` of the occurrence that ended last, for an hour after its end. The SLO
rules exclude a step whose span of samples overlaps either (a scrape interval that straddles the
end belongs to the maintenance); ``M3MonMaintenanceInProgress`` reads ``start < time() <= end``.
The boundaries, not an on/off flag, travel, so a scrape that lags a boundary changes nothing.
Computed at every scrape from the current model, so a reload (or a new maintenance file) shows at
the next scrape.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from monitor import conventions as cv
from monitor.maintenance.calendar import Maintenance, MaintenanceWindow, Occurrence, Target


class MaintenanceCollector(Collector):
    """Collects the boundary gauges from ``current()`` (the live model's maintenance)."""

    def __init__(self, current: Callable[[], Maintenance], clock: Callable[[], float] = time.time) -> None:
        self.current = current
        self.clock = clock

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now, maintenance = self.clock(), self.current()
        current = (
            (
                cv.MAINTENANCE_START,
                "Start (exclusive) of the maintenance occurrence in progress, else of the next",
            ),
            (
                cv.MAINTENANCE_END,
                "End (inclusive) of the maintenance occurrence in progress, else of the next",
            ),
        )
        yield from _boundaries(current, maintenance.published(now))
        ended = (
            (
                cv.MAINTENANCE_PREVIOUS_START,
                "Start (exclusive) of the maintenance occurrence that ended last",
            ),
            (cv.MAINTENANCE_PREVIOUS_END, "End (inclusive) of the maintenance occurrence that ended last"),
        )
        yield from _boundaries(ended, maintenance.published_previous(now, cv.SCRAPE_GAP_LIMIT_SECONDS))


def _boundaries(
    names: tuple[tuple[str, str], tuple[str, str]],
    found: Iterable[tuple[MaintenanceWindow, Target, Occurrence]],
) -> Iterator[GaugeMetricFamily]:
    labels = list(cv.MAINTENANCE_LABELS)
    (start_name, start_help), (end_name, end_help) = names
    start = GaugeMetricFamily(start_name, start_help + ", Unix seconds.", labels=labels)
    end = GaugeMetricFamily(end_name, end_help + ", Unix seconds.", labels=labels)
    for window, (klass, endpoint), occ in found:
        values = [
            window.name,
            klass,
            endpoint,
            _flag(klass in window.whole_classes),
            _flag(endpoint in window.whole_endpoints),
        ]
        start.add_metric(values, occ.start)
        end.add_metric(values, occ.end)
    yield start
    yield end


def _flag(value: bool) -> str:
    return "true" if value else "false"
