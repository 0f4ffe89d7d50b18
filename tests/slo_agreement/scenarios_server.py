"""Server-sourced scenarios: per-minute requests and latency observations of vLLM pools.

``Lat`` lists (seconds, count). Values sit between bucket edges (0.3, 4.0, 0.05 ...) or exactly on
the threshold, which is good (``le`` is "less than or equal").
"""

from __future__ import annotations

import math

from tests.slo_agreement.results import ABSENT, NOT_EDGE
from tests.slo_agreement.streams import (
    Detection,
    Pool,
    Scenario,
    ServerMinute,
    SLODef,
    requests,
    traffic,
)

Lat = tuple[tuple[float, int], ...]
CUSTOM = (1.0, 2.0)  # vLLM --custom-histogram-buckets 1 2 (no edge at 2.5)


def _lat(total: int, slow: int, slow_value: float = 4.0, fast_value: float = 0.3, at_threshold: int = 0,
         threshold: float = 2.5) -> Lat:  # fmt: skip
    return ((fast_value, total - slow - at_threshold), (threshold, at_threshold), (slow_value, slow))


def _timed(
    pool: str, minutes: range, per_minute: int, slow: dict[int, int], slow_value: float = 4.0,
    fast_value: float = 0.3, threshold: float = 2.5,
) -> tuple[ServerMinute, ...]:  # fmt: skip
    """Latency traffic: ``per_minute`` requests, ``slow.get(m, 0)`` of them above the threshold."""
    return traffic(pool, minutes, lambda m: requests(per_minute),
                   lambda m: _lat(per_minute, slow.get(m, 0), slow_value, fast_value, threshold=threshold))  # fmt: skip


def _diurnal(m: int) -> tuple[int, int]:
    """(requests, slow) at minute m: 20..200 requests a minute over 6 h; slowness grows with load."""
    load = (1 - math.cos(2 * math.pi * m / 360)) / 2
    total = round(20 + 180 * load)
    return total, round(total * 0.14 * load * load)


def _idle(m: int) -> dict[str, int]:
    if m <= 20:
        return requests(50)
    if 81 <= m <= 100:
        return requests(490, error=10)
    return requests(5) if m >= 141 else requests(0)


def availability(objective: str, period_days: int = 30) -> SLODef:
    return SLODef("availability", "server", objective, period_days)


def ttft(objective: str = "95") -> SLODef:
    return SLODef("ttft", "server", objective, threshold=2.5)


M = range  # minute ranges read better as M(1, 181)

SERVER_SCENARIOS = (
    Scenario("steady-server-availability", "48 requests a minute, an error every 10 min, abort bursts",
             availability("99.5"), 120,
             server=traffic("a", M(1, 121), lambda m: requests(40, error=int(m % 10 == 0), length=5,
                                                               abort=30 if m % 7 == 0 else 3))),
    Scenario("diurnal-server-ttft", "TTFT over a 6 h day of 20..200 requests a minute, slower at the peak",
             ttft(), 360,
             server=traffic("a", M(1, 361), lambda m: requests(_diurnal(m)[0]),
                            lambda m: _lat(_diurnal(m)[0], _diurnal(m)[1], at_threshold=m % 3))),
    Scenario("burst-server-errors", "200 requests a minute, 30 % errors for 10 minutes",
             availability("99.9"), 120,
             server=traffic("a", M(1, 121), lambda m: requests(200 - (60 if 61 <= m <= 70 else 0),
                                                               error=60 if 61 <= m <= 70 else 0))),
    Scenario("idle-gaps", "busy, idle for an hour, an incident at 10x the traffic, idle, trickle",
             availability("99.9"), 180, server=traffic("a", M(1, 181), _idle),
             finding="1: period ratio is Σbad/Σvalid, defined across empty 5m windows"),
    Scenario("counter-reset-availability", "vLLM restarts at minute 60 (30 requests lost to both)",
             SLODef("availability", "server", "99"), 120,
             server=tuple(
                 ServerMinute(60, "a", tuple(requests(20).items()), restart=True, lost=30) if m == 60
                 else ServerMinute(m, "a", tuple(requests(60, error=int(30 <= m <= 45 or 70 <= m <= 80)).items()))
                 for m in M(1, 121)
             )),
    Scenario("counter-reset-ttft", "TTFT histogram through a restart at minute 45", ttft(), 90,
             server=tuple(
                 ServerMinute(45, "a", tuple(requests(20).items()), _lat(20, 1), restart=True, lost=25) if m == 45
                 else ServerMinute(m, "a", tuple(requests(50).items()), _lat(50, 2))
                 for m in M(1, 91)
             )),
    Scenario("custom-buckets-no-edge", "a pool with buckets 1, 2, +Inf and a 2.5 s threshold, all fast",
             ttft(), 60, server=_timed("a", M(1, 61), 100, {}, fast_value=0.4), pools=(Pool("a", CUSTOM),),
             finding="2: no bucket at the threshold is no data + SLOThresholdNotBucketEdge",
             detection=Detection(NOT_EDGE, 0, 6)),  # for: 5m (+1 step)
    Scenario("mixed-pools", "pool a (default buckets, a slow spell) and pool b (buckets 1, 2: no events)",
             ttft(), 90, pools=(Pool("a"), Pool("b", CUSTOM)),
             server=_timed("a", M(1, 91), 100, {m: 40 if 61 <= m <= 70 else 3 for m in M(1, 91)})
             + _timed("b", M(1, 91), 100, {}, fast_value=0.4),
             finding="2: a pool without the edge adds nothing to the pool sum"),
    Scenario("server-absent", "the only pool goes away at minute 60: SLOMetricAbsent after 10 min",
             availability("99.5"), 90, pools=(Pool("a", gone_at=60),),
             server=traffic("a", M(1, 60), lambda m: requests(50)),
             detection=Detection(ABSENT, 60, 11)),  # for: 10m (+1 step)
    Scenario("objective-9999", "10 000 requests a minute, 0.5 % errors for 30 minutes",
             availability("99.99"), 100,
             server=traffic("a", M(1, 101), lambda m: requests(10_000 - 50 * (61 <= m <= 90),
                                                               error=50 * (61 <= m <= 90)))),
    Scenario("period-28d", "0.95 % errors at 99 % over 28 days: only the 28d factor (0.9333) tickets",
             availability("99", period_days=28), 60,
             server=traffic("a", M(1, 61), lambda m: requests(1981, error=19))),
    Scenario("server-tpot", "TPOT 0.1 s, a degraded spell of 0.15 s per token for 21 minutes",
             SLODef("tpot", "server", "99", threshold=0.1), 90,
             server=_timed("a", M(1, 91), 100, {m: 20 for m in M(40, 61)}, slow_value=0.15, fast_value=0.05,
                           threshold=0.1)),
)  # fmt: skip
