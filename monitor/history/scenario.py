"""The story a generated history tells, and the load it is told under.

A history of ``days`` days ends at ``end`` (the moment the demo starts). Over it:

* users load every pool with a **diurnal shape** (low at night UTC, peak mid-afternoon, lighter at
  weekends);
* the interactive pool **browns out** once, at 60 % of the span (in a two-week history, inside
  the second week, the one the demo reports): the simulator's own fault switches
  (:class:`monitor.sim.faults.Faults`: every step slower, prefill slower still, a share of HTTP 500s);
* one pool gets a **deployment change** (a new vLLM release with more GPU memory for the KV cache:
  a new fingerprint, and more requests fit at once, so its queue drains);
* the monitor's **database goes away** for a short while; the writes of that stretch are spooled
  by the real :class:`~monitor.store.BufferedWriter` and replayed when it is back;
* a pool is **down for planned work** during each occurrence of a maintenance window of the model
  that covers the whole endpoint (every request fails with HTTP 503); the store leaves those
  events out of the SLIs, as it does live.

Everything is placed relative to ``end`` and ``days``, so the same arguments give the same story.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

from monitor.sim.faults import Faults

DAY = 86400.0
BROWNOUT_POOL = "m3-interactive"
BROWNOUT_SECONDS = 75 * 60.0
BROWNOUT_FAULTS = Faults(latency_multiplier=3.0, brownout_prefill_factor=4.0, error_rate=0.08)
DEPLOYMENT_POOL = "m3-repo"
#: What the deployment pool ran before the change: the previous vLLM release with less GPU memory
#: for the KV cache (fewer blocks, so fewer 100K-token requests fit at once).
PREVIOUS_VLLM = "0.32.1"
PREVIOUS_GPU_MEMORY = 0.85
PREVIOUS_KV_BLOCKS = 5120
OUTAGE_SECONDS = 20 * 60.0
#: A pool restarting for planned work: every request refused.
PLANNED_FAULTS = Faults(error_rate=1.0, error_status=503)


@dataclass(frozen=True)
class Scenario:
    """Where the events of one generated history fall (Unix seconds)."""

    start: float
    end: float
    brownout: tuple[float, float]
    deployment_at: float
    outage: tuple[float, float]
    brownout_pool: str = BROWNOUT_POOL
    deployment_pool: str = DEPLOYMENT_POOL
    brownout_faults: Faults = field(default_factory=lambda: BROWNOUT_FAULTS)
    #: (pool, start, end): the pool is down for planned work over ``(start, end]``.
    planned: tuple[tuple[str, float, float], ...] = ()

    def faults(self, pool: str, t: float) -> Faults:
        """The faults active on ``pool`` at ``t``."""
        if any(pool == p and a < t <= b for p, a, b in self.planned):
            return PLANNED_FAULTS
        if pool == self.brownout_pool and self.brownout[0] <= t < self.brownout[1]:
            return self.brownout_faults
        return Faults()


def _at_hour(t: float, hour: float) -> float:
    """The instant ``hour`` (UTC, fractional) on the day of ``t``."""
    d = datetime.fromtimestamp(t, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return d.timestamp() + hour * 3600.0


def scenario(end: float, days: float, planned: tuple[tuple[str, float, float], ...] = ()) -> Scenario:
    """The story of ``days`` days up to ``end``: brown-out at 60 %, deployment change at 70 %,
    database outage at 85 % of the span (each moved to a plausible hour of its day), and the
    ``planned`` work (pool, start, end) of the model's maintenance windows."""
    start = end - days * DAY
    span = end - start
    brown = min(_at_hour(start + 0.6 * span, 14 + 1 / 6), end - 2 * BROWNOUT_SECONDS)
    deploy = min(_at_hour(start + 0.7 * span, 10.5), end - 3600.0)
    outage = min(_at_hour(start + 0.85 * span, 3.25), end - 2 * OUTAGE_SECONDS)
    return Scenario(
        start,
        end,
        (max(start, brown), max(start, brown) + BROWNOUT_SECONDS),
        max(start + 1.0, deploy),
        (max(start, outage), max(start, outage) + OUTAGE_SECONDS),
        planned=planned,
    )


def load(t: float) -> float:
    """Share of a pool's peak user traffic at ``t`` (0.2 at night, 1.0 at 15:00 UTC on weekdays)."""
    d = datetime.fromtimestamp(t, UTC)
    hour = d.hour + d.minute / 60.0 + d.second / 3600.0
    daily = 0.5 - 0.5 * math.cos(2 * math.pi * (hour - 3.0) / 24.0)  # 0 at 03:00, 1 at 15:00
    weekend = 0.55 if d.weekday() >= 5 else 1.0
    return (0.2 + 0.8 * daily) * weekend
