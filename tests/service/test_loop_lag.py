"""m3mon_event_loop_lag_seconds: a held loop shows as lag, an idle one as (almost) none."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor import conventions as cv
from monitor.service.loop_lag import LoopLag

HOLD = 0.6


def _served(registry: CollectorRegistry) -> dict[str, float]:
    """The histogram's samples as the exporter's text page serves them."""
    page = generate_latest(registry).decode()
    return {s.name + s.labels.get("le", ""): s.value for f in text_string_to_metric_families(page)
            for s in f.samples if s.name.startswith(cv.EVENT_LOOP_LAG)}  # fmt: skip


async def _watch_while(lag: LoopLag, hold: bool) -> None:
    watcher = asyncio.create_task(lag.watch())
    await asyncio.sleep(lag.tick / 2)  # the first tick is waiting
    if hold:
        time.sleep(HOLD)  # work that does not yield: the loop is held
    await asyncio.sleep(lag.tick * 2)
    watcher.cancel()


def test_a_held_loop_is_served_as_lag() -> None:
    registry = CollectorRegistry()
    lag = LoopLag(registry, tick=0.1)
    asyncio.run(_watch_while(lag, hold=True))
    served = _served(registry)
    # The tick asked to wake 0.05 s after the hold began: it woke when the hold ended, 0.55 s late.
    assert served[f"{cv.EVENT_LOOP_LAG}_sum"] >= HOLD - lag.tick, served
    assert served[f"{cv.EVENT_LOOP_LAG}_bucket0.25"] < served[f"{cv.EVENT_LOOP_LAG}_count"], served


def test_an_idle_loop_has_no_tick_late_by_a_second() -> None:
    registry = CollectorRegistry()
    lag = LoopLag(registry, tick=0.1)
    asyncio.run(_watch_while(lag, hold=False))
    served = _served(registry)
    assert served[f"{cv.EVENT_LOOP_LAG}_count"] >= 1, served
    assert served[f"{cv.EVENT_LOOP_LAG}_bucket1.0"] == served[f"{cv.EVENT_LOOP_LAG}_count"], served
