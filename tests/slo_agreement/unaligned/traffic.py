"""Real-traffic worlds: a server world's requests counted as the spans the monitor pair receives.

A ``source: traffic`` SLO's events are real requests, counted by the monitor that receives their
spans (docs/slo-events.md, "Goodput of real traffic"): its exporter's
``m3mon_traffic_requests_total`` rises, and the store keeps a slice, at the instant a batch of
spans arrives. So the process whose restart loses events is the receiving monitor replica's, never
vLLM's. :func:`traffic_world` turns a (faulty) server world into one:

* each pool's span exporter sends a batch every :data:`BATCH_EVERY` seconds (at its own phase) of
  the requests finished since its last batch, to one replica of the pair at random (a load
  balancer), to the other when that one is down, nowhere when both are (lost: no event);
* a pool that crashes loses the batch it had not sent yet (those requests are no events);
* one replica **crash-loops** for two to eight minutes (each process living 3–60 s, down 1–5 s
  between), so a new process's count often overtakes the old one's by the next scrape, while
  the server world's own faults (a crash-looping pool failing most requests, failed scrapes of the
  monitors, a replica down around a maintenance edge) stay;
* in :data:`CLEAN` of the worlds, requests fail only inside maintenance (the pools restart, even
  crash-loop, without failing a request), so no engine may alert at all.

A span's request is bad when the request failed (the span carries an error): the class has no
latency SLO, so every answered request is good. Nothing here imports :mod:`monitor`; a
:class:`~tests.slo_agreement.unaligned.world.Run` is one span here: ``start`` its request's finish,
``end`` its arrival, ``replica`` the receiver, ``pool`` the pool that served it.
"""

from __future__ import annotations

import dataclasses
import random

from tests.slo_agreement.unaligned.faults import _fail_between, crash_loop
from tests.slo_agreement.unaligned.world import MINUTES, REPLICAS, Run, World

#: A pool's span exporter sends its batch this often (OpenTelemetry's BatchSpanProcessor default).
BATCH_EVERY = 5.0
#: Share of worlds whose requests fail only inside maintenance (their pool restarts fail none).
CLEAN = 0.4
#: How long a crash-looping replica is down between two of its processes (seconds).
DOWN_BETWEEN = (1.0, 5.0)


def _crash_looping(rng: random.Random, w: World) -> tuple[str, list[tuple[float, float]]]:
    """A replica and its down spans ``(down, up)`` while it crash-loops."""
    replica = rng.choice(REPLICAS)
    start = rng.uniform(20, MINUTES - 30) * 60
    spans: list[tuple[float, float]] = []
    for t in crash_loop(rng, start, start + rng.uniform(2, 8) * 60):
        if not spans or t > spans[-1][1]:  # a process that lived less than its start-up is none
            spans.append((t, t + rng.uniform(*DOWN_BETWEEN)))
    taken = w.monitor_down.get(replica, ())
    return replica, [(a, b) for a, b in spans if not any(x <= b and a <= y for x, y in taken)]


def _spans(rng: random.Random, w: World) -> tuple[Run, ...]:
    out = []
    for pool in w.pools:
        flush, pending = rng.uniform(0, BATCH_EVERY), []
        for t, bad in (*w.requests[pool], (MINUTES * 60.0 + BATCH_EVERY, False)):
            while t > flush:
                died = max((r for r in w.restarts[pool] if r <= flush), default=-1.0)
                pending = [(f, b) for f, b in pending if f > died]  # a crashed process's batch is never sent
                first = rng.choice(REPLICAS)
                to = next((r for r in (first, *REPLICAS) if not w.down(r, flush)), None)
                if to is not None:
                    out += [Run(finished, flush, to, was_bad, pool) for finished, was_bad in pending]
                pending, flush = [], flush + BATCH_EVERY
            pending.append((t, bad))
    return tuple(sorted(out, key=lambda r: (r.end, r.start)))


def traffic_world(w: World, seed: int) -> World:
    """``w`` (a server world) as a real-traffic world (module docstring)."""
    assert w.source == "server", "real traffic is a server world's requests"
    rng = random.Random(seed * 104729 + 44)
    replica, spans = _crash_looping(rng, w)
    down = {
        r: tuple(sorted((*w.monitor_down.get(r, ()), *(spans if r == replica else ())))) for r in REPLICAS
    }
    restarts = {r: tuple(sorted({*w.monitor_restarts[r], *(b for _, b in down[r])})) for r in REPLICAS}
    prometheus, monitors = dict(w.prometheus), dict(w.monitors)
    prometheus[f"monitor-{replica}"] = _fail_between(prometheus[f"monitor-{replica}"], spans)
    for pool in w.pools:
        monitors[(replica, pool)] = _fail_between(monitors[(replica, pool)], spans)
    requests = w.requests
    if rng.random() < CLEAN:  # the pools restart without failing a request: nothing may alert
        inside = w.in_maintenance  # (its span arrives within a batch period: still inside)
        requests = {p: tuple((t, bad and inside(p, t) and inside(p, t + BATCH_EVERY)) for t, bad in rs)
                    for p, rs in w.requests.items()}  # fmt: skip
    out = dataclasses.replace(w, source="traffic", sli="goodput", prometheus=prometheus, monitors=monitors,
                              monitor_restarts=restarts, monitor_down=down, requests=requests)  # fmt: skip
    return dataclasses.replace(out, runs=_spans(rng, out))
