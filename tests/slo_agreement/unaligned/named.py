"""Worlds built by hand for issue 22's findings 2–4, each with no bad event outside maintenance.

Every one has one pool of 5 requests a second scraped every 15 s at phase 7 s (the issue's
setting), both monitor replicas reading every slot, nothing failing but what the finding needs.
Its requests fail only inside maintenance, so no engine may alert and no window may hold a bad
event (the upper bound of :mod:`tests.slo_agreement.unaligned.bounds` is 0):

* ``residue`` (finding 2): an 80-minute window over the class; the old window records,
  ``increase()`` less the exact step rises, kept bad events with no valid ones left;
* ``window-end`` (finding 3): every request fails in the last ten minutes of the window; the old
  rules placed the last scrape interval's errors after the end and paged;
* ``skipped`` (finding 4): the same, and Prometheus skips the evaluation at minute 40; the old
  step form lost that minute's maintenance events and counted them.

``crash-loop`` (run by ``tests/slo_agreement/test_monitor_faults.py``, not with the three) is
not clean: its pool crash-loops from minute 30 to 50 (each process living 3–60 s,
:func:`~tests.slo_agreement.unaligned.faults.crash_loop`), each process failing 20–95 % of its
requests. A new process's totals often overtake the old one's before the next scrape; rules that
find a reset per summed counter then read a small rise of valid events and the full count of bad
ones, more bad events than valid in a window. The hard property there is bad <= valid.
"""

from __future__ import annotations

import dataclasses
import random

from tests.slo_agreement.unaligned.faults import crash_loop, loop_requests
from tests.slo_agreement.unaligned.world import MINUTES, REPLICAS, START_EVENTS, Schedule, Window, World

RATE = 5.0


def _every(interval: float, phase: float) -> Schedule:
    n = int((MINUTES * 60 + interval - phase) // interval) + 1
    return Schedule(tuple(phase + k * interval for k in range(n)))


def _requests(window: Window, failing_from: float) -> tuple[tuple[float, bool], ...]:
    out = []
    k = 1
    while START_EVENTS + k / RATE < MINUTES * 60 - 90:
        t = START_EVENTS + k / RATE
        out.append((t, max(window.start, failing_from) < t <= window.end))
        k += 1
    return tuple(out)


def _world(seed: int, window: Window, failing_from: float, skipped: frozenset[int] = frozenset()) -> World:
    monitors = {(r, "a"): Schedule(tuple(k * 15.0 + (0.3 if r == "a" else 0.31) for k in range(MINUTES * 4 + 2)))
                for r in REPLICAS}  # fmt: skip
    prometheus = {
        "a": _every(15.0, 7.0),
        **{f"monitor-{r}": _every(15.0, 3.0 + i) for i, r in enumerate(REPLICAS)},
    }
    return World(seed, "availability", "server", "99.9", ("a",), {"a": 15.0}, {"a": _requests(window, failing_from)},
                 {"a": ()}, (), {r: () for r in REPLICAS}, (window,), prometheus, 0, skipped, monitors, None)  # fmt: skip


RESIDUE = _world(901, Window("w0", 20 * 60.0, 100 * 60.0), failing_from=20 * 60.0)
WINDOW_END = _world(902, Window("w0", 20 * 60.0, 60 * 60.0), failing_from=50 * 60.0)
SKIPPED = _world(903, Window("w0", 20 * 60.0, 60 * 60.0), failing_from=30 * 60.0, skipped=frozenset({40}))


def _crash_loop(seed: int) -> World:
    rng = random.Random(seed)
    base = _world(seed, Window("w0", 100 * 60.0, 105 * 60.0), failing_from=MINUTES * 60.0)
    span = (30 * 60.0, 50 * 60.0)
    restarts = crash_loop(rng, *span)
    requests = loop_requests(rng, base.requests["a"], restarts)
    return dataclasses.replace(base, restarts={"a": restarts}, requests={"a": requests})


CRASH_LOOP = _crash_loop(904)
NAMED = {"residue": RESIDUE, "window-end": WINDOW_END, "skipped": SKIPPED}
