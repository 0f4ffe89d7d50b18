"""The monitor's own faults and a crash-looping server, mixed into a seeded world.

* **a crash-looping vLLM**: a pool restarts again and again, each process living 10–90 s (some
  less than one scrape interval), its counters starting over each time; while it loops most of
  its requests fail. A new process's totals often overtake the old one's by the next scrape, so a
  counter's reset is not visible in its own values;
* **failed scrapes of the monitor**: Prometheus fails to scrape a monitor replica for a few
  minutes in a row (a scrape timeout, a network partition);
* **monitor restarts inside and at the edges of maintenance**: a replica is down for 5 s to
  4 min (no scrape of it succeeds, it scrapes nothing), then starts over (its probe counters at 0),
  the outage starting or ending within a few seconds of a boundary or inside the window;
* **late writes**: a replica's writes of a span arrive at its end (its spool replayed), which the
  seeded worlds already draw; :func:`with_faults` makes sure every faulty world has one.

Nothing here imports :mod:`monitor`; times are seconds after the world's start.
"""

from __future__ import annotations

import bisect
import dataclasses
import random

from tests.slo_agreement.unaligned.world import MINUTES, REPLICAS, START_EVENTS, Schedule, Window, World

#: A crash-looping process lives this long (seconds).
LIFETIME = (3.0, 60.0)
#: Share of a crash-looping process's requests that fail (drawn per process).
LOOP_BAD = (0.2, 0.95)


def crash_loop(rng: random.Random, start: float, end: float) -> tuple[float, ...]:
    """Restart instants of a pool that crash-loops over ``(start, end]``."""
    out, t = [], start
    while t < end:
        out.append(t)
        t += rng.uniform(*LIFETIME)
    return tuple(out)


def loop_requests(
    rng: random.Random, requests: tuple[tuple[float, bool], ...], restarts: tuple[float, ...]
) -> tuple[tuple[float, bool], ...]:
    """``requests`` with those a crash-looping process finished failing at that process's share."""
    share = {r: rng.uniform(*LOOP_BAD) for r in restarts}
    out = []
    for t, bad in requests:
        i = bisect.bisect_left(restarts, t) - 1  # the process that finished it started at restarts[i]
        inside = 0 <= i < len(restarts) - 1
        out.append((t, bad or (inside and rng.random() < share[restarts[i]])))
    return tuple(out)


def _outage_at(rng: random.Random, windows: tuple[Window, ...]) -> tuple[float, float]:
    """An outage of 5 s to 4 min inside a window or across one of its edges (anywhere without one)."""
    length = rng.choice((5.0, 20.0, 75.0, 150.0, 240.0))
    if not windows:
        start = rng.uniform(START_EVENTS, MINUTES * 60 - 600)
        return start, start + length
    w = rng.choice(windows)
    where = rng.choice(("start", "end", "inside"))
    if where == "inside":
        start = rng.uniform(w.start, max(w.start, w.end - length))
    else:
        edge = w.start if where == "start" else w.end
        start = edge - rng.choice((length, length / 2, 0.0)) + rng.uniform(-3.0, 3.0)
    return start, start + length


def _fail_between(sched: Schedule, spans: list[tuple[float, float]]) -> Schedule:
    down = {i for i, t in enumerate(sched.times) if any(a <= t <= b for a, b in spans)}
    return Schedule(sched.times, sched.failed | frozenset(down))


def _failed_runs(rng: random.Random) -> list[tuple[float, float]]:
    """One to four minutes of failed scrapes of a monitor replica."""
    start = rng.uniform(START_EVENTS, MINUTES * 60 - 600)
    return [(start, start + rng.uniform(60.0, 240.0))]


def with_faults(w: World, seed: int) -> World:
    """``w`` with the monitor's own faults and (server worlds) a crash-looping pool mixed in."""
    rng = random.Random(seed * 7919 + 41)
    restarts, requests = dict(w.restarts), dict(w.requests)
    if w.source == "server":
        pool = rng.choice(w.pools)
        start = rng.uniform(20, MINUTES - 40) * 60
        span = (start, start + rng.uniform(4, 20) * 60)
        loop = crash_loop(rng, *span)
        restarts[pool] = tuple(sorted((*w.restarts[pool], *loop)))
        requests[pool] = loop_requests(rng, w.requests[pool], loop)
    prometheus, monitors = dict(w.prometheus), dict(w.monitors)
    monitor_restarts = {r: list(w.monitor_restarts[r]) for r in REPLICAS}
    outages: dict[str, tuple[tuple[float, float], ...]] = {}
    for replica in REPLICAS:
        target = f"monitor-{replica}"
        prometheus[target] = _fail_between(prometheus[target], _failed_runs(rng))
        if rng.random() < 0.7:
            down = _outage_at(rng, w.maintenance)
            outages[replica] = (down,)
            prometheus[target] = _fail_between(prometheus[target], [down])
            for pool in w.pools:
                monitors[(replica, pool)] = _fail_between(monitors[(replica, pool)], [down])
            monitor_restarts[replica].append(down[1])
    runs = tuple(r for r in w.runs if not any(a <= r.end < b for a, b in outages.get(r.replica, ())))
    late = w.late
    if late is None:
        start = rng.uniform(20, MINUTES - 40) * 60
        late = (rng.choice(REPLICAS), start, start + rng.uniform(2, 12) * 60)
    return dataclasses.replace(
        w, restarts=restarts, requests=requests, prometheus=prometheus, monitors=monitors, runs=runs,
        monitor_restarts={r: tuple(sorted(v)) for r, v in monitor_restarts.items()}, late=late,
        monitor_down=outages,
    )  # fmt: skip
