"""The GPU half of the scrape job: each endpoint's GPU exporter page, read beside its ``/metrics``.

:class:`GpuScrapes` keeps, per endpoint with a ``gpu_exporter``, the last reading and the signals a
bottleneck verdict reads (``signals[endpoint]``: the interval between its last two good GPU
scrapes, or the one page after the first), and publishes the per-GPU gauges
(:class:`monitor.scrape.gpu_metrics.GpuMetrics`). A failed scrape is logged, sets
``m3mon_gpu_scrape_success`` to 0 and drops the endpoint's GPU series and signals.
"""

from __future__ import annotations

import asyncio
import logging
import time

import httpx

from monitor.errors import ScrapeError
from monitor.model import Endpoint, GpuExporter
from monitor.scrape.fetch import fetch_text
from monitor.scrape.gpu import GpuReading, read_gpu_text
from monitor.scrape.gpu_metrics import GpuMetrics
from monitor.scrape.gpu_signals import GpuSignals, gpu_signals

log = logging.getLogger(__name__)

#: Deadline of one GPU exporter scrape (dcgm-exporter answers from its own cache).
GPU_TIMEOUT = 10.0


async def read_gpu(client: httpx.AsyncClient, gpu: GpuExporter) -> GpuReading:
    """One read of a GPU exporter page (ScrapeError when it cannot be read or is not that page)."""
    text = await fetch_text(client, gpu.url, timeout=GPU_TIMEOUT)
    return await asyncio.to_thread(read_gpu_text, text, time.time(), gpu.kind)


class GpuScrapes:
    """GPU readings and signals per endpoint (O(1) per endpoint)."""

    def __init__(self, client: httpx.AsyncClient, metrics: GpuMetrics) -> None:
        self.client, self.metrics = client, metrics
        self.readings: dict[str, GpuReading] = {}
        self.signals: dict[str, GpuSignals] = {}
        self.ready: dict[str, asyncio.Event] = {}  # set once an endpoint's first GPU scrape ended

    async def first(self, endpoint: str) -> None:
        """Wait for the endpoint's first GPU scrape to end (at once when it has or there is none)."""
        event = self.ready.get(endpoint)
        if event is not None:
            await event.wait()

    def forget(self, endpoint: str) -> None:
        self.readings.pop(endpoint, None)
        self.signals.pop(endpoint, None)
        self.metrics.forget(endpoint)

    async def scrape(self, endpoint: Endpoint) -> GpuSignals | None:
        """Scrape the endpoint's GPU exporter; None (and no GPU series) when it fails or has none."""
        gpu = endpoint.gpu_exporter
        if gpu is None:
            return None
        ready = self.ready.setdefault(endpoint.name, asyncio.Event())
        try:
            reading = await read_gpu(self.client, gpu)
        except ScrapeError as exc:
            self.metrics.failed(endpoint.name)
            self.signals.pop(endpoint.name, None)
            log.warning(
                "GPU scrape %s (%s) failed: %s",
                endpoint.name,
                gpu.url,
                exc,
                extra={"kind": "gpu_scrape_failed"},
            )
            return None
        finally:
            ready.set()
        found = gpu_signals(endpoint.name, reading, self.readings.get(endpoint.name))
        self.readings[endpoint.name] = reading
        self.signals[endpoint.name] = found
        self.metrics.update(found)
        return found
