"""Which causes the evidence supports, each with its seconds in the tail and the source that named it.

A stage is a cause only when it is **large**: at least the class's floor — :data:`FLOOR_SHARE` of
the class's tightest objective for that latency (TTFT or e2e), at least :data:`MIN_FLOOR` — and
when **enough requests stand behind it**: at least :data:`BEHIND` of the window's requests (and
:data:`BEHIND_SHARE` of them) took the floor in that stage alone, one of them in the recent
window (so a cause clears within the recent window of going away). A 150 ms proxy delay under a
2.5 s TTFT objective is no cause; two slow probes of forty are not a pattern. Without an
objective, the floor is :data:`NO_OBJECTIVE_FLOOR` or a fifth of the tail's P95, whichever is
larger, and prefill and decode (the model's own work) are never named: nothing says they are too
slow.

The engine's queue is read from every source at once — the probes' P95+ band, real traffic's,
the server's queue-time histogram and its ``num_requests_waiting`` gauge — so the verdict is there
while the queue holds back the very probes it would otherwise need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from monitor.bottleneck.evidence import GAUGES, GPUS, PROBES, SERVER, Evidence
from monitor.bottleneck.gpu import GpuWindow
from monitor.bottleneck.moments import recurring, sampled_after_queue, while_queued
from monitor.bottleneck.stages import StageTail

FLOOR_SHARE = 0.25
MIN_FLOOR = 0.05
NO_OBJECTIVE_FLOOR = 0.25
BEHIND = 3
BEHIND_SHARE = 0.05
#: prefill/decode are causes only when their latency's P95 is at least AT_RISK of its objective
#: and the stage alone takes at least WORK_SHARE of it (the model's own work, not a wait)
AT_RISK = 0.8
WORK_SHARE = 0.5
RETRY_STORM = 0.10
SHED_PROBES, SHED_MIN = 0.05, 2
SHED_SERVER = 0.01
#: The API server's own answers (http_requests_total, sglang:http_responses_total) over the recent
#: window: a cause at this share of its answers and this many of them, not one error.
HTTP_SHARE, HTTP_MIN = 0.05, 10
#: Codes that refuse work for load (SGLang reports exact codes; vLLM groups them, and its queue
#: limits are read from admission_rejections_total instead: its "4xx" also holds bad requests).
SHED_CODES = ("429", "503")
ERROR_CODES = ("5xx", "500", "502", "504")
QUEUE_GROWING = 1.0
QUEUE_LEVEL = 2.0
KV_FULL = 0.80
KV_PREEMPTING = 0.70
PREEMPTIONS = 3.0
EVICTION_THRASH = 0.5
PREFIX_DROP, PREFIX_BASELINE = 0.5, 0.2
MIX_CHANGE = 0.3


@dataclass(frozen=True)
class Cause:
    verdict: str
    stage: str | None
    seconds: float  # what the cause costs a tail request (its stage's seconds), 0 when unknown
    source: str
    why: str

    def to_json(self) -> dict[str, object]:
        return {"verdict": self.verdict, "stage": self.stage, "seconds": self.seconds,
                "source": self.source, "why": self.why}  # fmt: skip


def floor(e: Evidence, metric: str) -> float:
    objective = e.objectives.ttft if metric == "ttft" else e.objectives.e2e
    if objective is not None:
        return max(MIN_FLOOR, FLOOR_SHARE * objective)
    tails = (e.probe_ttft, e.traffic_ttft) if metric == "ttft" else (e.probe_e2e, e.traffic_e2e)
    p95 = max((t.p95 for t in tails if t.p95 is not None and e.enough(t)), default=0.0)
    return max(NO_OBJECTIVE_FLOOR, FLOOR_SHARE * p95)


def _client(e: Evidence, tail: StageTail, stage: str, limit: float) -> Cause | None:
    """``stage`` of one request population, when large and backed (module docstring)."""
    if tail.requests < BEHIND:
        return None
    behind = tail.above(stage, limit)
    needed = max(BEHIND, math.ceil(BEHIND_SHARE * tail.requests))
    if behind < needed or tail.above(stage, limit, since=e.recent_start) < 1:
        return None
    ordered = sorted(v for _, v in tail.values.get(stage, ()))
    p95 = ordered[max(1, math.ceil(0.95 * len(ordered))) - 1] if ordered else 0.0
    seconds = max(tail.seconds(stage), min(p95, tail.p95 or p95))
    name = stage.replace("_", " ")
    why = f"{name} {seconds:.2f} s in the tail, {behind} of {tail.requests} {tail.source} >= {limit:.2f} s"
    return Cause("", stage, seconds, tail.source, why)


def _best(e: Evidence, stage: str, metric: str, least: float = 0.0) -> Cause | None:
    limit = max(floor(e, metric), least)
    tails = (e.probe_ttft, e.traffic_ttft) if metric == "ttft" else (e.probe_e2e, e.traffic_e2e)
    found = [c for t in tails if (c := _client(e, t, stage, limit)) is not None]
    return max(found, key=lambda c: c.seconds, default=None)


def _named(c: Cause | None, verdict: str, why: str = "") -> Cause | None:
    if c is None:
        return None
    return Cause(verdict, c.stage, c.seconds, c.source, f"{c.why}{'; ' + why if why else ''}")


def _shedding(e: Evidence) -> Cause | None:
    share = e.pool.rejected_share
    # a refusal that clients retry costs the retries' seconds (so the two keep one order)
    retried = _best(e, "retry", "ttft")
    seconds = 0.0 if retried is None else retried.seconds
    if share is not None and share >= SHED_SERVER:
        why = f"{e.pool.rejections:g} admission rejections ({share:.0%} of requests)"
        return Cause("load_shedding", "retry", seconds, SERVER, why)
    shed, answers = e.pool.answered(*SHED_CODES)
    if shed >= HTTP_MIN and shed >= HTTP_SHARE * answers:
        why = f"the server answered 429/503 to {shed:g} of {answers:g} requests ({shed / answers:.0%})"
        return Cause("load_shedding", "retry", seconds, SERVER, why)
    if e.runs and e.shed >= SHED_MIN and e.shed / e.runs >= SHED_PROBES:
        why = f"{e.shed} of {e.runs} probe runs met a 429/503"
        return Cause("load_shedding", "retry", seconds, "probes", why)
    return None


def _retries(e: Evidence) -> Cause | None:
    c = _best(e, "retry", "ttft") or _best(e, "retry", "e2e")
    if c is not None:
        return _named(c, "retry_storm")
    if e.runs and e.retried / e.runs >= RETRY_STORM:
        return Cause("retry_storm", "retry", 0.0, "probes", f"{e.retried} of {e.runs} probe runs retried")
    if e.retried and _shedding(e) is not None:
        # the server refuses work now and what it refused comes back: a retry policy (the client's
        # or a gateway's) is fixed behaviour, so a retried run beside sustained refusals shows it
        why = (f"{e.retried} probe run(s) retried in {e.window / 60:g} min while the server refuses "
               "requests: refused requests come back as retries")  # fmt: skip
        return Cause("retry_storm", "retry", 0.0, "probes", why)
    failed, answers = e.pool.answered(*ERROR_CODES)
    if failed >= HTTP_MIN and failed >= HTTP_SHARE * answers:
        why = (f"the server answered 5xx to {failed:g} of {answers:g} requests ({failed / answers:.0%}): "
               "clients and gateways retry what fails")  # fmt: skip
        return Cause("retry_storm", "retry", 0.0, SERVER, why)
    return None


def _application(e: Evidence) -> Cause | None:
    """A class with tool loops: its tools and client (``application``: the e2e no server or
    network stage explains), or the server's turnaround after tool results."""
    if not e.tools:
        return None
    found = [c for s in ("application", "tool_turnaround") if (c := _best(e, s, "e2e")) is not None]
    return _named(max(found, key=lambda c: c.seconds, default=None), "application_bound")


def cache_evidence(e: Evidence) -> str | None:
    """Why the KV cache is the cause (None: no cache evidence; docs/bottleneck.md)."""
    p = e.pool
    if p.kv_usage is None or p.kv_usage < KV_PREEMPTING:
        return None
    # vLLM preempts when it runs out of blocks, and a preemption frees them: sustained
    # preemptions over a gauge that reads "near full" at its scrapes
    if p.preemptions is not None and p.preemptions >= PREEMPTIONS and p.preempting_intervals >= 2:
        return f"KV {p.kv_usage:.0%} used, {p.preemptions:g} preemptions"
    if p.kv_usage < KV_FULL:
        return None
    if p.eviction_before_reuse is not None and p.eviction_before_reuse >= EVICTION_THRASH:
        return (
            f"KV {p.kv_usage:.0%} used, {p.eviction_before_reuse:.0%} of evicted blocks evicted before reuse"
        )
    if p.batch_full is False:
        held = f"the batch runs {p.running_now:.0f} of its peak {p.running_peak:.0f}"
        return f"KV {p.kv_usage:.0%} used: {held}, the cache has no room for more"
    if _prefix_fell(e):
        return f"KV {p.kv_usage:.0%} used, prefix hits {p.prefix_hit_before:.0%} -> {p.prefix_hit:.0%}"
    return None


def _prefix_fell(e: Evidence) -> bool:
    now, before = e.pool.prefix_hit, e.pool.prefix_hit_before
    return (
        now is not None and before is not None and before >= PREFIX_BASELINE and now <= before * PREFIX_DROP
    )


def cache_note(e: Evidence) -> str | None:
    """A prefix-hit drop that is not cache pressure, said as what it is."""
    p = e.pool
    if not _prefix_fell(e) or cache_evidence(e) is not None:
        return None
    mix = ""
    if (
        p.prompt_tokens
        and p.prompt_tokens_before
        and abs(p.prompt_tokens / p.prompt_tokens_before - 1) >= MIX_CHANGE
    ):
        was, now = p.prompt_tokens_before, p.prompt_tokens
        mix = f"; prompt tokens per request {was:.0f} -> {now:.0f}: the traffic changed"
    kv = f"KV {p.kv_usage:.0%} used" if p.kv_usage is not None else "no KV reading"
    return f"prefix hits {p.prefix_hit_before:.0%} -> {p.prefix_hit:.0%} with {kv}, not cache pressure{mix}"


def _queue(e: Evidence) -> Cause | None:
    """The queue's cost from every source, or the queue growing right now (module docstring)."""
    limit = floor(e, "ttft")
    found = [c for c in (_best(e, "queue", "ttft"),) if c is not None]
    server = e.pool.stage_p95.get("queue")
    if e.server_enough and server is not None and e.pool.p95_above("queue", limit):
        found.append(Cause("", "queue", server, SERVER, f"server queue P95 {server:.2f} s > {limit:.2f} s"))
    if found:
        return max(found, key=lambda c: c.seconds)
    g, now = e.pool.waiting_growth, e.pool.waiting_now
    if g is not None and now is not None and g >= QUEUE_GROWING and now >= QUEUE_LEVEL:
        return Cause("", "queue", 0.0, GAUGES, f"queue growing {g:+.1f}, {now:.0f} waiting now")
    return _recurring(e, limit)


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


def _queue_named(e: Evidence, q: Cause) -> Cause:
    cache = cache_evidence(e)
    if cache is not None:
        return _named(q, "cache_bound", cache) or q
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
        return _named(q, "gpu_bound", why) or q
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
        return _named(q, "queue_bound", why) or q
    if e.gpu.room and not filling and (waiting or never_busy):
        return Cause("scheduler_bound", q.stage, q.seconds, q.source, f"{q.why}; {gpu}")
    if e.gpu.room and not filling:
        why = f"{gpu}, and the queue has drained ({e.pool.waiting_now or 0:.0f} waiting): load came in bursts"
        return _named(q, "queue_bound", why) or q
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
    return _named(q, "queue_bound", why) or q


def _engine_stage(e: Evidence, stage: str, metric: str, verdict: str) -> Cause | None:
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
    found = [c for c in (_best(e, stage, metric, limit),) if c is not None]
    server = e.pool.stage_p95.get(stage) if e.server_enough else None
    if server is not None and e.pool.p95_above(stage, limit):
        found.append(Cause("", stage, server, SERVER, f"server {stage} P95 {server:.2f} s > {limit:.2f} s"))
    best = max(found, key=lambda c: c.seconds, default=None)
    at = f"{metric} P95 {max(p95s):.2f} s of a {objective:g} s objective"
    return _named(best, verdict, at)


def _engine(e: Evidence) -> list[Cause]:
    """The engine's causes: the queue's, and prefill or decode at risk of their objective. On
    saturated GPUs (an SM, tensor or power reading, or busy with the batch full) every engine
    stage is slow for the same reason: one ``gpu_bound`` cause holds them, at the seconds of the
    largest, rather than sending the operator to shorten prompts or outputs."""
    q = _queue(e)
    queued = None if q is None else _queue_named(e, q)
    work = [c for c in (_engine_stage(e, "prefill", "ttft", "prefill_bound"),
                        _engine_stage(e, "decode", "e2e", "decode_bound")) if c is not None]  # fmt: skip
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


def causes(e: Evidence) -> tuple[Cause, ...]:
    """Every cause that holds, the costliest first (shedding, which refuses rather than delays,
    is ordered by the retry seconds it causes; a cause of unknown seconds comes after the others)."""
    found = [
        _shedding(e),
        _retries(e),
        _application(e),
        _named(_best(e, "frontend", "ttft"), "proxy_bound"),
        *_engine(e),
    ]
    kept = [c for c in found if c is not None]
    return tuple(sorted(kept, key=lambda c: -c.seconds))
