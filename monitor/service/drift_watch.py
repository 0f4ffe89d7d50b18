"""The drift guard in the service: each good scrape's page against what the endpoint's rules,
SLOs and dashboards read (:mod:`monitor.scrape.drift`), published as
``m3mon_metric_family_served`` and logged when a family's status changes (once, not every scrape).

The needs are computed from the generated files once per endpoint and model (a reload recomputes
them); a failed scrape changes nothing, so a paused or failing scrape never reads as drift.
"""

from __future__ import annotations

import asyncio
import logging

from monitor.model import Endpoint, Model
from monitor.scrape.drift import Drift, Need, assess
from monitor.scrape.metrics import ScrapeMetrics
from monitor.scrape.reading import Reading

log = logging.getLogger(__name__)


class DriftWatch:
    """Per endpoint: its needs, and the statuses last published."""

    def __init__(self, metrics: ScrapeMetrics) -> None:
        self.metrics = metrics
        self._needs: dict[str, tuple[Need, ...]] = {}
        self._last: dict[str, dict[str, str]] = {}

    def apply(self, model: Model) -> None:
        """A new model: recompute needs on the next scrape; drop endpoints that are gone."""
        kept = {e.name for e in model.endpoints}
        for name in set(self._last) - kept:
            self.metrics.forget_drift(name)
            self._last.pop(name, None)
        self._needs.clear()

    async def observe(self, model: Model, endpoint: Endpoint, reading: Reading) -> tuple[Drift, ...]:
        """Judge one good scrape's page; publish and log what changed."""
        surface = reading.surface  # None: a reading restored from the store
        if surface is None:
            return ()
        if endpoint.name not in self._needs:  # generating the files takes ~0.1 s: not on the loop
            from monitor.generate.needs import all_needs

            self._needs.update(await asyncio.to_thread(all_needs, model))
        drifts = assess(endpoint.name, self._needs.get(endpoint.name, ()), surface)
        self.metrics.set_drift(endpoint.name, drifts)
        before = self._last.get(endpoint.name, {})
        for d in drifts:
            if before.get(d.family) != d.status and not (d.served and d.family not in before):
                level = logging.INFO if d.served else logging.WARNING
                log.log(level, "metric drift: %s", d.line())
        self._last[endpoint.name] = {d.family: d.status for d in drifts}
        return drifts
