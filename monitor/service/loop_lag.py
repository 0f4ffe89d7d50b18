"""The service's event-loop lag: ``m3mon_event_loop_lag_seconds``, how late a tick ran.

Everything the service does time-bound runs on one asyncio loop: probe rounds and their
timeouts, scrapes, the exporter's and receivers' HTTP requests, the scheduler. A tick asks to
wake every :data:`~monitor.conventions.EVENT_LOOP_TICK` seconds and observes how much later it
woke. A loop held by a CPU-starved process or by work that does not yield (a blocking call, a
read loop that never suspends) shows as lag; the histogram's ``_sum`` is the time the loop was
late, which ``M3MonEventLoopBlocked`` reads (:mod:`monitor.generate.self_rules`). Probe timings
themselves come from kernel receive stamps and stay right; their schedules and timeouts do not.
"""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Histogram

from monitor import conventions as cv


class LoopLag:
    """The lag histogram and the tick that fills it."""

    def __init__(self, registry: CollectorRegistry, tick: float = cv.EVENT_LOOP_TICK) -> None:
        self.tick = tick
        self.histogram = Histogram(
            cv.EVENT_LOOP_LAG,
            f"Seconds the event loop ran a tick (asked for every {tick:g}s) late: time it was held.",
            buckets=cv.EVENT_LOOP_LAG_BUCKETS,
            registry=registry,
        )

    async def watch(self) -> None:
        """Tick until cancelled, observing each tick's lateness."""
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(self.tick)
            self.histogram.observe(max(0.0, loop.time() - asked - self.tick))
