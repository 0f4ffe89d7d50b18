"""A seeded world whose clocks do not line up: what happened, and when each observer looked.

Nothing here imports :mod:`monitor`. A world is one request class with one SLO, served by one or
two vLLM pools (server SLIs: every request the pools finish, at its true instant) or probed by an
HA pair of monitors (probe SLIs: every probe run, at its completion), and the timing of everyone
who observes it, drawn from a seed:

* Prometheus scrapes each pool at its own interval and phase, with jitter and a few failed
  scrapes, and the monitor replicas at theirs; its rule group evaluates at an offset within the
  minute and skips an evaluation now and then;
* the monitor replicas scrape each pool on the slots of its interval (a few milliseconds to a
  second apart), replica A failing many slots and B a few, and one replica's writes may arrive
  late (its spool replayed after an outage);
* a pool may restart (its counters start over), a monitor replica may restart (its probe counters
  start over); maintenance windows (whole minutes, as configured) cover the class or one pool of
  two, with a burst of errors inside each; some worlds have no bad event outside maintenance at
  all (the hard property: then nothing may alert).

Times are seconds after the world's start (the store's T0).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field

MINUTES = 120
START_EVENTS = 240.0  # nothing happens before every observer has read once (first samples/readings)
REPLICAS = ("a", "b")
#: vLLM's request-latency bucket edges (its e2e histogram); the e2e threshold is one of them.
E2E_EDGES = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
             240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
THRESHOLD = {"e2e": 5.0, "ttft": 2.0}


@dataclass(frozen=True)
class Window:
    """A maintenance window over ``(start, end]`` covering the class on ``pools`` (empty: all)."""

    name: str
    start: float
    end: float
    pools: tuple[str, ...] = ()

    def covers(self, pool: str) -> bool:
        return not self.pools or pool in self.pools


@dataclass(frozen=True)
class Schedule:
    """One observer's reads of one target: instants, and which of them fail."""

    times: tuple[float, ...]
    failed: frozenset[int] = frozenset()

    def good(self) -> list[float]:
        return [t for i, t in enumerate(self.times) if i not in self.failed]

    def max_gap(self) -> float:
        good = self.good()
        return max((b - a for a, b in itertools.pairwise(good)), default=math.inf)


@dataclass(frozen=True)
class Run:
    """A probe run of replica ``replica`` over ``(start, end]``; ``bad``: it failed (availability)
    or was slow (ttft). In a real-traffic world, one request's span (:mod:`.traffic`): ``start``
    the request's finish, ``end`` the span's arrival at ``replica``, ``pool`` the pool that served it."""

    start: float
    end: float
    replica: str
    bad: bool
    pool: str = ""


@dataclass(frozen=True)
class World:
    seed: int
    sli: str  # availability, e2e (server), ttft (probes) or goodput (traffic)
    source: str  # server, probes or traffic (:mod:`.traffic`)
    objective: str  # percent, as configured
    pools: tuple[str, ...]
    interval: dict[str, float]  # each pool's scrape interval (Prometheus and the monitors alike)
    requests: dict[str, tuple[tuple[float, bool], ...]]  # pool -> (instant, bad), by instant
    restarts: dict[str, tuple[float, ...]]  # pool -> instants its server restarted
    runs: tuple[Run, ...]  # probe runs, by completion
    monitor_restarts: dict[str, tuple[float, ...]]  # replica -> instants its process restarted
    maintenance: tuple[Window, ...]
    prometheus: dict[str, Schedule]  # target (pool, or "monitor-<replica>") -> Prometheus' scrapes
    eval_offset: int  # seconds after each whole minute at which Prometheus evaluates the group
    skipped: frozenset[int]  # minutes whose evaluation Prometheus skipped
    monitors: dict[tuple[str, str], Schedule]  # (replica, pool) -> the replica's scrapes of the pool
    late: (
        tuple[str, float, float] | None
    )  # (replica, from, until): its writes of that span arrive at ``until``
    probe_interval: float = 10.0
    notes: tuple[str, ...] = field(default=())
    #: replica -> spans ``(down, up)`` its process was down (it starts over at ``up``)
    monitor_down: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)

    def down(self, replica: str, t: float) -> bool:
        return any(a <= t < b for a, b in self.monitor_down.get(replica, ()))

    @property
    def name(self) -> str:
        return f"{'t' if self.source == 'traffic' else 'u'}{self.seed}"

    @property
    def threshold(self) -> float | None:
        return THRESHOLD.get(self.sli)

    def in_maintenance(self, pool: str, t: float) -> bool:
        return any(w.covers(pool) and w.start < t <= w.end for w in self.maintenance)

    def boundaries(self, pool: str) -> list[float]:
        return [b for w in self.maintenance if w.covers(pool) for b in (w.start, w.end)]


def _poisson(rng: random.Random, rate: float, start: float, end: float) -> list[float]:
    out, t = [], start
    while True:
        t += rng.expovariate(rate)
        if t > end:
            return out
        out.append(t)


def _windows(rng: random.Random, pools: tuple[str, ...]) -> tuple[Window, ...]:
    out = []
    at = rng.randint(15, 40)
    for i in range(rng.choice((1, 1, 2))):
        length = rng.choice((5, 7, 12, 20, 33, 45))
        if at + length > MINUTES - 20:
            break
        scope = (rng.choice(pools),) if len(pools) > 1 and rng.random() < 0.5 else ()
        out.append(Window(f"w{i}", at * 60.0, (at + length) * 60.0, scope))
        at += length + rng.randint(8, 40)
    return tuple(out)


def _bad(
    rng: random.Random, world_bad: float, burst: tuple[float, float] | None, t: float, inside: bool
) -> bool:
    if inside:
        return rng.random() < 0.5  # the planned work breaks things: nobody may be paged for it
    if burst is not None and burst[0] < t <= burst[1]:
        return rng.random() < 0.3
    return rng.random() < world_bad


def _schedule(rng: random.Random, interval: float, phase: float, jitter: float, fail: float) -> Schedule:
    times = []
    t = phase
    while t < MINUTES * 60 + interval:
        times.append(max(0.0, t + rng.uniform(-jitter, jitter)))
        t += interval
    failed = frozenset(i for i in range(len(times)) if rng.random() < fail)
    return Schedule(tuple(times), failed)


def _monitor_scrapes(
    rng: random.Random, pools: tuple[str, ...], interval: dict[str, float]
) -> dict[tuple[str, str], Schedule]:
    """Both replicas scrape every slot of a pool's interval (slots are epoch-aligned), A failing
    often and B sometimes, each a little late by its own skew."""
    out = {}
    for pool in pools:
        n = int(MINUTES * 60 // interval[pool]) + 1
        for replica, fail in (("a", 0.2), ("b", 0.06)):
            skew = rng.uniform(0.0, 0.9)
            times = tuple(k * interval[pool] + skew + rng.uniform(0, 0.05) for k in range(n))
            failed = frozenset(i for i in range(n) if rng.random() < fail)
            out[(replica, pool)] = Schedule(times, failed)
    return out


def _requests(rng: random.Random, pools: tuple[str, ...], windows: tuple[Window, ...],
              clean: bool) -> dict[str, tuple[tuple[float, bool], ...]]:  # fmt: skip
    world_bad = 0.0 if clean else rng.choice((0.001, 0.004, 0.02))
    burst = None
    if not clean and rng.random() < 0.5:
        b = rng.uniform(10, MINUTES - 30) * 60
        burst = (b, b + rng.uniform(3, 15) * 60)
    out = {}
    for pool in pools:
        rate = rng.uniform(1.0, 6.0)
        times = _poisson(rng, rate, START_EVENTS, MINUTES * 60 - 90)
        inside = [any(w.covers(pool) and w.start < t <= w.end for w in windows) for t in times]
        out[pool] = tuple((t, _bad(rng, world_bad, burst, t, i)) for t, i in zip(times, inside, strict=True))
    return out


def _runs(rng: random.Random, windows: tuple[Window, ...], clean: bool, every: float) -> tuple[Run, ...]:
    world_bad = 0.0 if clean else rng.choice((0.01, 0.05))
    out = []
    k = int(START_EVENTS // every) + 1
    while k * every < MINUTES * 60 - 90:
        start = k * every + rng.uniform(0, 0.5)
        end = start + rng.uniform(0.3, 3.0)
        inside = any(w.start < end <= w.end for w in windows)
        bad = rng.random() < (0.5 if inside else world_bad)
        out.append(Run(start, end, "a" if rng.random() < 0.6 else "b", bad))
        k += 1
    return tuple(sorted(out, key=lambda r: r.end))


def world(seed: int) -> World:
    """The world of ``seed`` (the same seed, the same world)."""
    rng = random.Random(seed)
    source = rng.choice(("server", "server", "probes"))
    sli = rng.choice(("availability", "e2e")) if source == "server" else rng.choice(("availability", "ttft"))
    pools = ("a", "b") if source == "server" and rng.random() < 0.6 else ("a",)
    interval = {p: rng.choice((15.0, 30.0)) for p in pools}
    windows = _windows(rng, pools)
    clean = rng.random() < 0.4
    requests = _requests(rng, pools, windows, clean) if source == "server" else {p: () for p in pools}
    runs = _runs(rng, windows, clean, 10.0) if source == "probes" else ()
    restarts = {p: (rng.uniform(30, MINUTES - 20) * 60,) if rng.random() < 0.3 else () for p in pools}
    monitor_restarts = {r: (rng.uniform(30, MINUTES - 20) * 60,) if source == "probes" and rng.random() < 0.3 else ()
                        for r in REPLICAS}  # fmt: skip
    prometheus = {p: _schedule(rng, interval[p], rng.randint(0, int(interval[p]) - 1), rng.choice((0, 1)), 0.02)
                  for p in pools}  # fmt: skip
    prometheus |= {
        f"monitor-{r}": _schedule(rng, 15.0, rng.randint(0, 14), rng.choice((0, 1)), 0.02) for r in REPLICAS
    }
    skipped = frozenset(rng.sample(range(6, MINUTES - 5), rng.choice((0, 1, 2))))
    late = None
    if rng.random() < 0.35:
        start = rng.uniform(20, MINUTES - 40) * 60
        late = (rng.choice(REPLICAS), start, start + rng.uniform(2, 12) * 60)
    return World(seed, sli, source, rng.choice(("99", "99.5", "99.9")), pools, interval, requests, restarts, runs,
                 monitor_restarts, windows, prometheus, rng.randint(0, 59), skipped,
                 _monitor_scrapes(rng, pools, interval), late)  # fmt: skip
