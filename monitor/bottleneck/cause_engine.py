"""The engine's causes: the queue (from every source at once: the probes' P95+ band, real
traffic's, the server's queue-time histogram and its ``num_requests_waiting`` gauge, so the
verdict is there while the queue holds back the very probes it would otherwise need), named for
what holds it (the KV cache, saturated GPUs, the scheduler, or unknown GPUs), and prefill or
decode at risk of their objective."""

from __future__ import annotations

import math

from monitor.bottleneck.cause_base import BEHIND, BEHIND_SHARE, Cause, best, floor, named
from monitor.bottleneck.cause_cache import KV_FULL, cache_evidence
from monitor.bottleneck.evidence import GAUGES, GPUS, PROBES, SERVER, Evidence
from monitor.bottleneck.gpu import GpuWindow
from monitor.bottleneck.moments import queue_grew, recurring, sampled_after_queue, while_queued

#: prefill/decode are causes only when their latency's P95 is at least AT_RISK of its objective
#: and the stage alone takes at least WORK_SHARE of it (the model's own work, not a wait)
AT_RISK = 0.8
WORK_SHARE = 0.5
QUEUE_GROWING = 1.0
QUEUE_LEVEL = 2.0


def queue(e: Evidence) -> Cause | None:
    """The queue's cost from every source, or the queue growing now or at a scrape of the recent
    window (:func:`monitor.bottleneck.moments.queue_grew`), or recurring (module docstring)."""
    limit = floor(e, "ttft")
    found = [c for c in (best(e, "queue", "ttft"),) if c is not None]
    server = e.pool.stage_p95.get("queue")
    if e.server_enough and server is not None and e.pool.p95_above("queue", limit):
        found.append(Cause("", "queue", server, SERVER, f"server queue P95 {server:.2f} s > {limit:.2f} s"))
    if found:
        return max(found, key=lambda c: c.seconds)
    g, now = e.pool.waiting_growth, e.pool.waiting_now
    if g is not None and now is not None and g >= QUEUE_GROWING and now >= QUEUE_LEVEL:
        return Cause("", "queue", 0.0, GAUGES, f"queue growing {g:+.1f}, {now:.0f} waiting now")
    again = _recurring(e, limit)
    grew = None if again is not None else queue_grew(e, QUEUE_GROWING, QUEUE_LEVEL)
    if grew is None:
        return again
    at, g, level = grew
    why = f"queue grew {g:+.1f} to {level:.0f} waiting {e.end - at:.0f} s ago ({now or 0:.0f} waiting now)"
    return Cause("", "queue", 0.0, GAUGES, why)


def _recurring(e: Evidence, limit: float) -> Cause | None:
    """The queue recurring over the tail window (:func:`monitor.bottleneck.moments.recurring`)."""
    needed = max(BEHIND, math.ceil(BEHIND_SHARE * max(e.probe_ttft.requests, e.traffic_ttft.requests)))
    r = recurring(e, limit, needed)
    if r is None:
        return None
    why = (f"requests waited above {limit:.2f} s in {r.bursts} bursts over {e.window / 60:g} min "
           f"({r.intervals} server scrape intervals, {r.requests} probe or traffic requests): "
           "the queue comes back with the load")  # fmt: skip
    return Cause("", "queue", r.seconds, SERVER if r.intervals else PROBES, why)


def _while_queued(e: Evidence) -> tuple[GpuWindow, bool] | None:
    return while_queued(e, floor(e, "ttft"), QUEUE_LEVEL)


def _sampled_after_queue(e: Evidence) -> bool:
    return sampled_after_queue(e, floor(e, "ttft"), QUEUE_LEVEL)


#: What helps a pool whose memory interface, not its SMs, is at its limit (the gpu_bound remedy's
#: memory-bound part, said in the cause so the operator does not chase compute).
MEMORY_REMEDY = (
    "memory-bound decode: an FP8 KV cache or quantized weights, more tensor parallelism (more "
    "memory bandwidth per request), fewer concurrent long contexts"
)


def gpu_text(e: Evidence) -> str:
    """The GPU reading as the verdict says it (with the memory-bound remedy when it applies)."""
    extra = f"; {MEMORY_REMEDY}" if e.gpu.memory_bound else ""
    return f"{e.gpu.describe()} [{GPUS}]{extra}"


def queue_named(e: Evidence, q: Cause) -> Cause:
    cache = cache_evidence(e)
    if cache is not None:
        return named(q, "cache_bound", cache) or q
    gpu = gpu_text(e)
    full = e.pool.batch_full
    if e.gpu.saturated and (e.gpu.fine or full is not False):
        return Cause("gpu_bound", q.stage, q.seconds, q.source, f"{q.why}; {gpu}")
    if e.gpu.saturated:  # kernels run all the time, but the batch has free slots
        then = _while_queued(e)
        if then is not None and then[1]:  # ... now; it was full while requests waited (a burst)
            why = f"{q.why}; {gpu}, with the batch full while requests waited: the load comes in bursts"
            return Cause("gpu_bound", q.stage, q.seconds, q.source, why)
        slots = f"the batch runs {e.pool.running_now:.0f} of its peak {e.pool.running_peak:.0f}"
        why = f"{q.why}; {gpu}, but {slots}: requests wait with slots free"
        return Cause("scheduler_bound", q.stage, q.seconds, q.source, why)
    # the KV cache near full now or over the window: requests may wait for blocks, not the
    # scheduler (a larger batch would preempt)
    filling = any(v is not None and v >= KV_FULL for v in (e.pool.kv_now, e.pool.kv_usage))
    # the GPUs at the moments requests waited: load in bursts saturates them at each burst and
    # leaves them idle between, so the state window alone would read busy, changing and room in turn
    then = None if filling or e.gpu.stale else _while_queued(e)
    if then is not None and then[0].saturated and (then[0].fine or then[1]):
        why = (f"while requests waited: {then[0].describe()} [{GPUS}]; now {e.pool.waiting_now or 0:.0f} "
               "waiting: the load comes in bursts beyond capacity")  # fmt: skip
        return named(q, "gpu_bound", why) or q
    # a stalled scheduler leaves requests waiting *now* beside the room, or the GPUs idle over the
    # whole window the queue was seen in; a queue that has drained while the GPUs were busy at
    # times in that window came with load (a burst), not the scheduler's
    waiting = e.pool.waiting_now is not None and e.pool.waiting_now >= QUEUE_LEVEL
    h = e.gpu_recent.hottest
    never_busy = h is not None and h.busy_share == 0
    if e.gpu.room and not filling and then is None and not _sampled_after_queue(e):
        # room read only before requests began waiting (an exporter scraped once a minute): room
        # while they wait is not shown (samples before and after the queue, both with room, are)
        why = f"{gpu}, but no GPU sample since requests began waiting"
        return named(q, "queue_bound", why) or q
    if e.gpu.room and not filling and (waiting or never_busy):
        return Cause("scheduler_bound", q.stage, q.seconds, q.source, f"{q.why}; {gpu}")
    if e.gpu.room and not filling:
        why = f"{gpu}, and the queue has drained ({e.pool.waiting_now or 0:.0f} waiting): load came in bursts"
        return named(q, "queue_bound", why) or q
    if e.gpu.read:
        unproven = e.gpu.unproven
        why = (
            "the KV cache is near full"
            if filling
            else f"{gpu}, but {unproven}"
            if unproven
            else f"{gpu}, busy at its latest sample"
        )
    elif e.gpu.stale:
        why = f"GPU exporter stale: {len(e.gpu.stale)} GPU(s) without a recent sample"
    else:
        why = "GPU exporter configured but not read in the window" if e.gpu_configured else "no GPU exporter"
    return named(q, "queue_bound", why) or q


def engine_stage(e: Evidence, stage: str, metric: str, verdict: str) -> Cause | None:
    objective = e.objectives.ttft if metric == "ttft" else e.objectives.e2e
    if objective is None:
        return None
    limit = floor(e, metric)
    tails = (e.probe_ttft, e.traffic_ttft) if metric == "ttft" else (e.probe_e2e, e.traffic_e2e)
    p95s = [t.p95 for t in tails if t.p95 is not None and e.enough(t)]
    server_p95 = e.pool.stage_p95.get(metric) if e.server_enough else None
    p95s += [server_p95] if server_p95 is not None else []
    if not p95s or max(p95s) < AT_RISK * objective:
        return None
    limit = max(limit, WORK_SHARE * objective)
    found = [c for c in (best(e, stage, metric, limit),) if c is not None]
    server = e.pool.stage_p95.get(stage) if e.server_enough else None
    if server is not None and e.pool.p95_above(stage, limit):
        found.append(Cause("", stage, server, SERVER, f"server {stage} P95 {server:.2f} s > {limit:.2f} s"))
    top = max(found, key=lambda c: c.seconds, default=None)
    at = f"{metric} P95 {max(p95s):.2f} s of a {objective:g} s objective"
    return named(top, verdict, at)


def engine(e: Evidence) -> list[Cause]:
    """The engine's causes: the queue's, and prefill or decode at risk of their objective. On
    saturated GPUs (an SM, tensor or power reading, or busy with the batch full) every engine
    stage is slow for the same reason: one ``gpu_bound`` cause holds them, at the seconds of the
    largest, rather than sending the operator to shorten prompts or outputs."""
    q = queue(e)
    queued = None if q is None else queue_named(e, q)
    work = [c for c in (engine_stage(e, "prefill", "ttft", "prefill_bound"),
                        engine_stage(e, "decode", "e2e", "decode_bound")) if c is not None]  # fmt: skip
    saturated = e.gpu.saturated and (e.gpu.fine or e.pool.batch_full is not False)
    gpu = queued is not None and queued.verdict == "gpu_bound"
    if work and (gpu or (saturated and e.gpu.fine)):
        largest = max([*work, *([queued] if queued else [])], key=lambda c: c.seconds)
        stages = ", ".join(c.stage or "" for c in (queued, *work) if c is not None)
        why = f"{stages} slow on saturated GPUs; {gpu_text(e)}"
        return [Cause("gpu_bound", largest.stage, largest.seconds, largest.source, why)]
    if queued is not None and queued.verdict == "queue_bound" and work:
        # the GPUs' state is unknown: slow prefill or decode may be the GPUs', so the queue's
        # verdict (capacity) leads and the stage is named beside it, never alone
        top = max(c.seconds for c in (queued, *work))
        lead = Cause(queued.verdict, queued.stage, top, queued.source, queued.why)
        return [lead, *work]
    return [c for c in (queued, *work) if c is not None]
