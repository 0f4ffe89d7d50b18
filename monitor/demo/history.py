"""The demo's week of history: written before the live phases, so the report has a week to tell.

The history runs the example config's probe plan at its own intervals (at least
:data:`HISTORY_MIN_PROBE_INTERVAL`, so a week is generated in about a minute), exports spans from
every pool but the extended-context one (whose breakdown then comes from its server histograms,
as for a vLLM started without ``--otlp-traces-endpoint``), and takes the demo's database away
for the scenario's outage (its folder is renamed away and back) while the buffered writer spools.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from pathlib import Path

from monitor.history import History, folder_outage, write_history
from monitor.model import Model
from monitor.store import Store

HISTORY_MIN_PROBE_INTERVAL = 120.0
#: Pools whose simulators run without OTLP export (live and in the history).
NO_SPANS = frozenset({"m3-extended"})


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%a %H:%M UTC")


def write_demo_history(model: Model, example: Model, database: Path, spool: Path, days: float) -> History:
    """Write ``days`` of history ending now into the demo's database; prints what it did."""
    intervals = {c.name: max(HISTORY_MIN_PROBE_INTERVAL, c.probe.interval) for c in example.classes}
    otlp = [e.name for e in model.endpoints if e.name not in NO_SPANS]
    print(f"\n== history: {days:g} days up to now, in accelerated time", flush=True)
    started = time.perf_counter()
    store = Store(model.storage.url)
    try:
        # whole seconds: the report's period starts at a datetime (microseconds), on which the
        # history's first rows (e.g. each pool's first deployment) must sit exactly
        end = float(math.floor(time.time()))
        hist = write_history(model, store, end, days, probe_intervals=intervals, otlp=otlp,
                             outage=(folder_outage(database), spool))  # fmt: skip
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
        f"  database away: {_when(scn.outage[0])} to {_when(scn.outage[1])}, "
        f"{hist.spooled} writes spooled and replayed",
        f"  wrote {hist.probes:,} probe results, {hist.spans:,} spans, {hist.intervals:,} scrape intervals, "
        f"{hist.slices:,} event slices, {hist.evaluations:,} evaluations in {seconds:.0f} s "
        f"(draw {hist.seconds['draw']:.0f} s, write {hist.seconds['write']:.0f} s, "
        f"evaluate {hist.seconds['evaluate']:.0f} s)",
    ]
