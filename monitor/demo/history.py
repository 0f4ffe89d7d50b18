"""The demo's week of history: written before the live phases, so the report has a week to tell.

The history runs the example config's probe plan at its own intervals (at least
:data:`HISTORY_MIN_PROBE_INTERVAL`, so a week is generated in about a minute), sends the demo's
tenant mix to the interactive pool (:data:`~monitor.demo.config.HISTORY_TRAFFIC_RATE`), exports
spans from every pool but the extended-context one (whose breakdown then comes from its server histograms,
as for a vLLM started without ``--otlp-traces-endpoint``), and takes the demo's database away
for the scenario's outage (its folder is renamed away and back) while the buffered writer spools.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from pathlib import Path

from monitor.demo.config import DEMO_MIX, HISTORY_TRAFFIC_RATE, TRAFFIC_POOL
from monitor.history import History, folder_outage, write_history
from monitor.history.scenario import DEPLOYMENT_POOL, PREVIOUS_VLLM, scenario
from monitor.history.traffic import RealTraffic
from monitor.model import Model
from monitor.store import Store

HISTORY_MIN_PROBE_INTERVAL = 120.0
UPGRADE_SECONDS = 30 * 60
#: Pools whose simulators run without OTLP export (live and in the history).
NO_SPANS = frozenset({"m3-extended"})


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%a %H:%M UTC")


def history_end() -> float:
    """Where the demo's history ends: now, in whole seconds (the report's period starts at a
    datetime, on which the history's first rows, e.g. each pool's first deployment, must sit)."""
    return float(math.floor(time.time()))


def planned_upgrade(end: float, days: float) -> dict[str, object]:
    """The demo's maintenance window: the deployment pool's upgrade, the half hour (whole minutes)
    before the history's deployment change; the history takes the pool down during it."""
    at = math.floor(scenario(end, days).deployment_at / 60) * 60
    return {
        "name": "repo-upgrade",
        "start": datetime.fromtimestamp(at - UPGRADE_SECONDS, UTC).isoformat(),
        "duration": f"{UPGRADE_SECONDS // 60}m",
        "endpoints": [DEPLOYMENT_POOL],
        "reason": f"vLLM {PREVIOUS_VLLM} -> 0.33.0 upgrade (planned restart)",
    }


def write_demo_history(
    model: Model, example: Model, database: Path, spool: Path, days: float, end: float
) -> History:
    """Write ``days`` of history ending at ``end`` into the demo's database; prints what it did."""
    intervals = {c.name: max(HISTORY_MIN_PROBE_INTERVAL, c.probe.interval) for c in example.classes}
    otlp = [e.name for e in model.endpoints if e.name not in NO_SPANS]
    print(f"\n== history: {days:g} days up to now, in accelerated time", flush=True)
    started = time.perf_counter()
    traffic = RealTraffic(DEMO_MIX, HISTORY_TRAFFIC_RATE, (TRAFFIC_POOL,)) if model.traffic.tenants else None
    store = Store(model.storage.url)
    try:
        hist = write_history(model, store, end, days, probe_intervals=intervals, otlp=otlp,
                             outage=(folder_outage(database), spool), traffic=traffic)  # fmt: skip
    finally:
        store.close()
    for line in history_lines(hist, time.perf_counter() - started):
        print(line)
    return hist


def history_lines(hist: History, seconds: float) -> list[str]:
    scn = hist.scenario
    return [
        f"  brown-out on {scn.brownout_pool}: {_when(scn.brownout[0])} to {_when(scn.brownout[1])}",
        f"  deployment change on {scn.deployment_pool}: {_when(scn.deployment_at)}",
        *(
            f"  planned maintenance on {pool}: {_when(a)} to {_when(b)}, down; its events count in no SLI"
            for pool, a, b in scn.planned
        ),
        f"  database away: {_when(scn.outage[0])} to {_when(scn.outage[1])}, "
        f"{hist.spooled} writes spooled and replayed",
        f"  wrote {hist.probes:,} probe results, {hist.spans:,} spans ({hist.requests:,} of tenants' real "
        f"requests), {hist.intervals:,} scrape intervals, "
        f"{hist.slices:,} event slices, {hist.evaluations:,} evaluations in {seconds:.0f} s "
        f"(draw {hist.seconds['draw']:.0f} s, write {hist.seconds['write']:.0f} s, "
        f"evaluate {hist.seconds['evaluate']:.0f} s)",
    ]
