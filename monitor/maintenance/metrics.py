"""The maintenance boundaries the monitor publishes for the generated rules.

Per window and (class, endpoint) it covers: ``m3mon_maintenance_start_timestamp_seconds`` and
``m3mon_maintenance_end_timestamp_seconds`` of the occurrence holding the scrape instant, else of
the next one (nothing once none remains). The rules read "in maintenance" at their own evaluation
instant as ``start < time() <= end``, so a scrape that lags a boundary by seconds changes nothing:
the boundaries, not an on/off flag, travel. Computed at every scrape from the current model, so
a reload (or a new maintenance file) shows at the next scrape.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from monitor import conventions as cv
from monitor.maintenance.calendar import Maintenance


class MaintenanceCollector(Collector):
    """Collects the two boundary gauges from ``current()`` (the live model's maintenance)."""

    def __init__(self, current: Callable[[], Maintenance], clock: Callable[[], float] = time.time) -> None:
        self.current = current
        self.clock = clock

    def collect(self) -> Iterator[GaugeMetricFamily]:
        labels = list(cv.MAINTENANCE_LABELS)
        start = GaugeMetricFamily(
            cv.MAINTENANCE_START,
            "Start (exclusive) of the maintenance occurrence in progress, else of the next, Unix seconds.",
            labels=labels,
        )
        end = GaugeMetricFamily(
            cv.MAINTENANCE_END,
            "End (inclusive) of the maintenance occurrence in progress, else of the next, Unix seconds.",
            labels=labels,
        )
        for window, (klass, endpoint), occ in self.current().published(self.clock()):
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
