"""What the class's pool said over the recent window: its queue, its shedding, its KV cache, and
where its own requests' time went (the server's histograms: every request, not only probes).

All from the scrape intervals of the class's endpoints that end in the window (plain vLLM: no
optional flag is needed). Histograms of all endpoints are merged, so the stage P95s are the
pool's; a pool serving several classes says so in the evidence.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median

from monitor.bottleneck.inputs import PoolPoint
from monitor.scrape.residency import kv_residency
from monitor.scrape.signals import Histogram

#: A batch is full at this share of its peak running requests (PoolWindow.batch_full).
FULL = 0.8
#: Server histograms read as stages (canonical names, monitor.scrape.names).
SERVER_STAGES = ("queue", "prefill", "decode", "ttft", "e2e")


def queue_growth(waiting: Sequence[tuple[float, float]]) -> float | None:
    """How much a queue grew, from ``(end, requests waiting)`` of its scrape intervals: the mean of
    the later half (by end) minus that of the earlier half; with an odd count the middle interval
    is in neither. None with fewer than two intervals."""
    ordered = [w for _, w in sorted(waiting)]
    half = len(ordered) // 2
    if half == 0:
        return None
    return sum(ordered[-half:]) / half - sum(ordered[:half]) / half


def above(h: Histogram, floor: float) -> bool:
    """Whether ``h``'s P95 is certainly above ``floor``: more than 5 % of its observations lie in
    buckets whose lower edge is at or above the first edge at or above ``floor``. An interpolated
    P95 is not enough: vLLM's queue-time buckets start at 0.3 s, so a queue of a few milliseconds
    interpolates to a P95 of 0.28 s."""
    if h.count <= 0:
        return False
    k = next((i for i, e in enumerate(h.edges) if e >= floor), None)
    if k is None or math.isinf(h.edges[k]):
        return False
    return (h.count - h.counts[k]) > 0.05 * h.count


def queued_spans(
    points: Sequence[PoolPoint], start: float, end: float, floor: float, level: float
) -> list[tuple[float, float, PoolPoint]]:
    """The scrape intervals ending in (start, end] in which requests waited — ``level`` or more
    waiting at its end, or its queue time certainly above ``floor`` (:func:`above`) — each as
    (its start, its end, the interval). An interval starts where its endpoint's previous one ended
    (the first: one median gap earlier)."""
    out = []
    for rows in _per_endpoint(points).values():
        gaps = sorted(b.end - a.end for a, b in itertools.pairwise(rows))
        gap = gaps[len(gaps) // 2] if gaps else 15.0
        for k, p in enumerate(rows):
            if not start < p.end <= end:
                continue
            h = p.histograms.get("queue")
            if (p.waiting or 0.0) >= level or (h is not None and above(h, floor)):
                out.append((rows[k - 1].end if k else p.end - gap, p.end, p))
    return sorted(out, key=lambda s: s[0])


def episodes(spans: Sequence[tuple[float, float]]) -> int:
    """How many separate runs of overlapping or adjacent ``(start, end)`` spans (sorted) make."""
    count, reach = 0, -math.inf
    for lo, hi in spans:
        if lo > reach + 1e-6:
            count += 1
        reach = max(reach, hi)
    return count


def merge(points: Sequence[PoolPoint], name: str) -> Histogram | None:
    merged: Histogram | None = None
    for p in points:
        h = p.histograms.get(name)
        if h is None or h.count <= 0:
            continue
        if merged is None:
            merged = h
        elif merged.edges == h.edges:
            merged = merged.plus(h)
        elif h.count > merged.count:
            merged = h
    return merged


def _per_endpoint(points: Sequence[PoolPoint]) -> dict[str, list[PoolPoint]]:
    out: dict[str, list[PoolPoint]] = defaultdict(list)
    for p in sorted(points, key=lambda p: p.end):
        out[p.endpoint].append(p)
    return out


def _sum(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


@dataclass(frozen=True)
class PoolWindow:
    """The pool over the recent window (and the window before it, for the prefix-hit baseline)."""

    intervals: int
    requests: float
    stage_p95: dict[str, float]  # stage -> P95 seconds from the merged histograms (interpolated)
    merged: dict[str, Histogram]  # stage -> the window's merged histogram
    observed: float  # requests in the TTFT (else e2e) histogram over the window
    waiting_growth: float | None  # summed over endpoints (queue_growth of each)
    waiting_now: float | None  # mean waiting over the last quarter of the window, summed
    running_now: float | None  # running at the latest scrape, summed
    running_peak: float | None  # the most running at once over both windows, summed per endpoint
    batches: dict[str, tuple[float, float, float]]  # per endpoint: running now, its ceiling, waiting
    rejections: float | None  # admission rejections (None: the server has no such counter)
    http: dict[str, float]  # the API server's answers by status over the window (summed)
    preemptions: float | None
    preempting_intervals: int  # scrape intervals with a preemption (sustained, not one)
    kv_usage: float | None  # median of the fullest endpoint's KV usage over the state window
    kv_now: float | None  # the fullest endpoint's KV usage at the latest scrape
    eviction_before_reuse: float | None
    prefix_hit: float | None
    prefix_hit_before: float | None
    prompt_tokens: float | None  # mean prompt tokens per request (request_prompt_tokens)
    prompt_tokens_before: float | None

    def p95_above(self, stage: str, floor: float) -> bool:
        """Whether the stage's P95 is certainly above ``floor`` (:func:`above`)."""
        h = self.merged.get(stage)
        return h is not None and above(h, floor)

    @property
    def batch_full(self) -> bool | None:
        """Whether the batch runs at its ceiling (at least :data:`FULL` of the most requests it ran
        at once over both windows; None without a running gauge). A queue that grows while the
        batch has free slots is the scheduler's, whatever a coarse GPU counter says."""
        if self.running_now is None or not self.running_peak:
            return None
        if len(self.batches) < 2:
            return self.running_now >= FULL * self.running_peak
        # several endpoints: the batches of those where requests wait (else all of them)
        queued = [b for b in self.batches.values() if b[2] >= 1] or list(self.batches.values())
        return all(now >= FULL * ceiling for now, ceiling, _ in queued if ceiling > 0)

    def answered(self, *statuses: str) -> tuple[float, float]:
        """How many answers had one of ``statuses`` (a code "503" counts under "5xx" too when the
        server groups them), and how many answers there were."""
        total = sum(self.http.values())
        hits = sum(n for s, n in self.http.items() if s in statuses)
        return hits, total

    @property
    def rejected_share(self) -> float | None:
        if self.rejections is None or self.requests + self.rejections <= 0:
            return None
        return self.rejections / (self.requests + self.rejections)


def _hit_rate(points: Sequence[PoolPoint]) -> float | None:
    pairs = [(p.prefix_hit_rate, p.requests) for p in points if p.prefix_hit_rate is not None]
    weight = sum(n for _, n in pairs)
    return sum(r * n for r, n in pairs) / weight if weight > 0 else None


def _prompt_mean(points: Sequence[PoolPoint]) -> float | None:
    h = merge(points, "prompt_tokens")
    return None if h is None else h.mean


def _eviction(points: Sequence[PoolPoint]) -> float | None:
    residencies = [r for p in points if (r := kv_residency(dict(p.histograms))) is not None]
    pairs = [
        (r.eviction_before_reuse, r.evicted_blocks)
        for r in residencies
        if r.eviction_before_reuse is not None
    ]
    blocks = sum(n for _, n in pairs)
    return sum(v * n for v, n in pairs) / blocks if blocks > 0 else None


def _late(rows: Sequence[tuple[float, float]], since: float) -> float | None:
    """Mean of the values after ``since`` (else the last value)."""
    late = [v for t, v in rows if t > since] or [v for _, v in rows[-1:]]
    return sum(late) / len(late) if late else None


def queue_state(now: Sequence[PoolPoint], start: float, end: float) -> tuple[float | None, float | None]:
    """The queue's growth over (start, end] and its level over the window's last quarter, summed."""
    growth, level = [], []
    last_quarter = end - (end - start) / 4
    for rows in _per_endpoint(now).values():
        waiting = [(p.end, p.waiting) for p in rows if p.waiting is not None]
        g = queue_growth(waiting)
        if g is not None:
            growth.append(g)
        if (w := _late(waiting, last_quarter)) is not None:
            level.append(w)
    return (sum(growth) if growth else None), (sum(level) if level else None)


def batches(
    points: Sequence[PoolPoint], start: float, end: float, peaks: Mapping[str, float]
) -> dict[str, tuple[float, float, float]]:
    """Each endpoint's batch: (running at its latest scrape in (start, end], its ceiling — the most
    it ran over ``points`` or ``peaks`` —, requests waiting over the window's last quarter)."""
    out = {}
    last_quarter = end - (end - start) / 4
    for endpoint, rows in _per_endpoint(points).items():
        running = [(p.end, p.running) for p in rows if p.running is not None]
        inside = [r for t, r in running if start < t <= end]
        if not inside:
            continue
        ceiling = max([r for _, r in running] + [peaks.get(endpoint, 0.0)])
        waiting = _late(
            [(p.end, p.waiting) for p in rows if p.waiting is not None and p.end <= end], last_quarter
        )
        out[endpoint] = (inside[-1], ceiling, waiting or 0.0)  # a filling batch is not short
    return out


def pool_window(
    points: Sequence[PoolPoint],
    start: float,
    end: float,
    peak: float | None = None,
    state: float | None = None,
    peaks: Mapping[str, float] | None = None,
) -> PoolWindow:
    """The intervals ending in (start, end] (and in the window before, for baselines)."""
    now = [p for p in points if start < p.end <= end]
    before = [p for p in points if start - (end - start) < p.end <= start]
    merged = {s: h for s in SERVER_STAGES if (h := merge(now, s)) is not None}
    stages = {s: q for s, h in merged.items() if (q := h.quantile(0.95)) is not None}
    seen = merged.get("ttft") or merged.get("e2e")
    growth, level = queue_state(now, start, end)
    batch = batches(points, start, end, peaks or {})
    running_now = sum(b[0] for b in batch.values()) if batch else None
    running_peak = sum(b[1] for b in batch.values()) if batch else None
    if peak is not None:
        running_peak = max(peak, running_peak or 0.0)
    # the KV cache's state now: over the last ``state`` seconds (the GPUs' window), not the whole window
    by_time = _kv_by_time([p for p in now if state is None or p.end > end - state])
    kv = [max(vs) for vs in by_time.values()]
    return PoolWindow(
        intervals=len(now),
        requests=sum(p.requests for p in now),
        stage_p95=stages,
        merged=merged,
        observed=0.0 if seen is None else seen.count,
        waiting_growth=growth,
        waiting_now=level,
        running_now=running_now,
        running_peak=running_peak,
        batches=batch,
        rejections=_sum([p.admission_rejections for p in now]),
        http=_statuses(now),
        preemptions=_sum([p.preemptions for p in now]),
        preempting_intervals=sum(1 for p in now if p.preemptions),
        kv_usage=median(kv) if kv else None,
        kv_now=max(by_time[max(by_time)]) if by_time else None,
        eviction_before_reuse=_eviction(now),
        prefix_hit=_hit_rate(now),
        prefix_hit_before=_hit_rate(before),
        prompt_tokens=_prompt_mean(now),
        prompt_tokens_before=_prompt_mean(before),
    )


def _statuses(points: Sequence[PoolPoint]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for p in points:
        for status, n in p.http_status.items():
            out[status] += n
    return dict(out)


def _kv_by_time(points: Sequence[PoolPoint]) -> dict[float, list[float]]:
    out: dict[float, list[float]] = defaultdict(list)
    for p in points:
        if p.kv_usage is not None:
            out[p.end].append(p.kv_usage)
    return out
