"""When requests waited: the scrape intervals with a queue over the tail window, what the GPUs and
the batch did inside them, and whether the queue came back in separate bursts (docs/bottleneck.md
"A queue that recurs holds", "The GPUs while requests waited").

Load in bursts near capacity queues at some bursts and saturates the GPUs at each, and leaves
them idle between: read over the state window alone, the verdict would say busy, "changing" and
room in turn while the queue's evidence stands, and clear between bursts. These read the same
evidence at the moments the queue was there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median

from monitor.bottleneck.evidence import Evidence
from monitor.bottleneck.gpu import GpuWindow, gpu_window
from monitor.bottleneck.pool import FULL, above, episodes, merge, queue_state, queued_spans

#: Requests waited above the floor in this many separate bursts over the tail window: the queue
#: recurs with the load, and it is a cause between its bursts too (the tail it owns is the window's).
RECURRING = 2
#: Moments of waiting closer than this are one burst.
BURST_GAP = 60.0


@dataclass(frozen=True)
class Recurring:
    bursts: int
    intervals: int  # the server's scrape intervals with the queue above the floor
    requests: int  # probe or real-traffic requests that waited at least the floor
    seconds: float  # the queue's P95 over the tail window (else the longest such request's wait)


def recurring(e: Evidence, limit: float, needed: int) -> Recurring | None:
    """Requests waited above the floor in :data:`RECURRING` separate bursts over the tail window
    (the server's scrape intervals and the probes' and real traffic's own queue times, bursts
    apart by :data:`BURST_GAP` or more), with enough requests behind it (the server's queue P95
    over the tail window certainly above the floor, or ``needed`` requests): load that comes in
    bursts near capacity queues at each one, and a verdict that followed each burst in and out
    would say two things in turn and never hold for the alert. The tail it owns is the window's
    (the probes' shares say so too)."""
    start = e.end - e.window
    tail = merge([p for p in e.intervals if start < p.end <= e.end], "queue")
    backed = tail is not None and above(tail, limit)  # the server's queue P95 over the tail window
    queued = queued_spans(e.intervals, start, e.end, limit, math.inf) if backed else []
    spans = [(lo, hi) for lo, hi, _ in queued]
    client = [(at, v) for t in (e.probe_ttft, e.traffic_ttft) for at, v in t.values.get("queue", ())
              if v >= limit and at > start]  # fmt: skip
    if not spans and len(client) < needed:
        return None
    moments = sorted([*spans, *((at, at + v) for at, v in client)])
    bursts = episodes([(lo, hi + BURST_GAP) for lo, hi in moments])
    if bursts < RECURRING:
        return None
    server = [] if tail is None or not spans else [tail.quantile(0.95) or 0.0]
    seconds = max([*server, *(v for _, v in client)], default=0.0)
    return Recurring(bursts, len(spans), len(client), seconds)


def sampled_after_queue(e: Evidence, limit: float, level: float) -> bool:
    """A GPU sample was taken after the last scrape interval in which requests waited (``level``
    waiting at its end, or its queue time above ``limit``)."""
    spans = queued_spans(e.intervals, e.end - e.window, e.end, limit, level)
    last = max((hi for _, hi, _ in spans), default=None)
    return last is not None and any(g.time >= last for g in e.gpu_points)


def while_queued(e: Evidence, limit: float, level: float) -> tuple[GpuWindow, bool] | None:
    """The GPUs at the moments requests waited (the scrape intervals with a queue, over the tail
    window), and whether the batch was full then (its median over them at :data:`~monitor.
    bottleneck.pool.FULL` of its peak or more); None without a GPU sample in them."""
    spans = queued_spans(e.intervals, e.end - e.window, e.end, limit, level)
    points = [g for g in e.gpu_points if any(lo < g.time <= hi for lo, hi, _ in spans)]
    if not points:
        return None
    running: dict[str, list[float]] = {}
    for _, _, p in spans:
        running.setdefault(p.endpoint, []).append(p.running or 0.0)
    # each endpoint where requests waited, against its own ceiling
    ceilings = {ep: b[1] for ep, b in e.pool.batches.items()}
    full = (
        bool(running)
        and all(median(r) >= FULL * ceilings[ep] for ep, r in running.items() if ceilings.get(ep))
        and any(ceilings.get(ep) for ep in running)
    )
    return gpu_window(points, -math.inf, e.end, live=False), full


def queue_grew(e: Evidence, growing: float, level: float) -> tuple[float, float, float] | None:
    """The latest scrape in the recent window at which the queue was growing — by ``growing`` or
    more over the recent window ending there, with ``level`` or more waiting over its last
    quarter — as (its end, the growth, the level); None if at none. A queue that grew at a burst
    is evidence for the recent window, as the probes' and the histograms' queue times are, rather
    than only while it still grows."""
    for end in sorted({p.end for p in e.intervals if e.recent_start < p.end <= e.end}, reverse=True):
        inside = [p for p in e.intervals if end - e.recent < p.end <= end]
        g, now = queue_state(inside, end - e.recent, end)
        if g is not None and now is not None and g >= growing and now >= level:
            return end, g, now
    return None
