"""Pools in simulated time: an hour of a vLLM pool with one injected cause, as the store would hold it.

The bottleneck verdict (docs/bottleneck.md) is judged on what a pool *does*, not on what the rules
read, so a :class:`World` models the pool itself, one simulated second at a time: requests arrive
(open loop at a rate, or a closed loop of clients), wait in a FIFO queue, are admitted while the
batch has slots and the KV cache has room (and the scheduler admits), prefill at a token rate and
decode at a time per output token that grows with the batch; the KV cache preempts the newest
request when it overflows; GPUs report activity from the batch they run, in the counter set a
cluster runs (dcgm-exporter's default set, its profiling set, or AMD's). Probes are requests like
any other, through the same queue, with a client-side front (network, proxy, the API server's
preprocessing), retries and tool rounds.

The pool itself is :mod:`monitor.sim.world_pool`. A world's fault starts at ``onset`` and lasts to
the end (or to ``until``). :func:`simulate` returns what the store
would hold — scrape intervals with vLLM's histograms (its default bucket edges), GPU samples per
device and probe runs — and :func:`inputs_at` cuts the verdict's :class:`~monitor.bottleneck.
inputs.Inputs` at any instant, as ``monitor.report.collect_bottleneck`` does from the store.
The numbers (an 8-GPU pool of 64 slots, 2,000-token prompts at 20k tokens/s, 30 ms per output
token) are illustrative, not a measured H200: the world tests the verdict's logic, not its
calibration.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field

from monitor.bottleneck.inputs import PEAK_WINDOW, GpuPoint, Inputs, PoolPoint, ProbeRun
from monitor.bottleneck.tail import SOURCE_METRICS, SOURCE_SPANS, Sample
from monitor.scrape.signals import Histogram
from monitor.sim.world_pool import Load, Pool, Req, World, poisson
from monitor.vllm_buckets import REQUEST_LATENCY, TIME_TO_FIRST_TOKEN, request_tokens

__all__ = ["SCRAPE", "Held", "Load", "World", "inputs_at", "simulate"]

SCRAPE = 15.0
PROMPT_EDGES = request_tokens(131072)


@dataclass
class Held:
    """What the store would hold after a world ran."""

    world: World
    pool: list[PoolPoint] = field(default_factory=list)
    gpus: list[GpuPoint] = field(default_factory=list)
    probes: list[Sample] = field(default_factory=list)
    runs: list[ProbeRun] = field(default_factory=list)
    traffic: list[Sample] = field(default_factory=list)  # real requests whose spans were exported


class _Hist:
    def __init__(self, edges: tuple[float, ...]) -> None:
        self.edges = (*edges, math.inf)
        self.counts = [0.0] * len(self.edges)
        self.sum = 0.0

    def add(self, v: float) -> None:
        self.counts[bisect.bisect_left(self.edges, v)] += 1
        self.sum += v

    def histogram(self) -> Histogram:
        cumulative, run = [], 0.0
        for c in self.counts:
            run += c
            cumulative.append(run)
        return Histogram(self.edges, tuple(cumulative), self.sum, run)


#: SGLang 0.5.23's bucket edges (/work/shared/fixtures/generated/sglang-0.5.23.metrics.txt)
SGLANG_QUEUE = (
    0.0,
    0.001,
    0.005,
    0.01,
    0.05,
    0.1,
    0.2,
    0.5,
    1.0,
    2.0,
    3.0,
    4.0,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    100.0,
    200.0,
    500.0,
    1000.0,
)
SGLANG_LATENCY = (
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    2.0,
    4.0,
    6.0,
    8.0,
    10.0,
    20.0,
    40.0,
    60.0,
    80.0,
    100.0,
    200.0,
    400.0,
    600.0,
    1200.0,
)
SGLANG_STAGE = tuple(round(0.001 * 1.62**k, 6) for k in range(30))
#: the stage histograms each server's page has (canonical names, monitor.scrape.names)
_SURFACE = {
    "vllm": ("queue", "prefill", "decode", "e2e", "ttft", "prompt_tokens"),
    "sglang": ("queue", "prefill", "e2e", "ttft", "prompt_tokens"),
    "sglang-0.4": ("e2e", "ttft"),
}
_EDGES = {"queue": REQUEST_LATENCY, "prefill": REQUEST_LATENCY, "decode": REQUEST_LATENCY,
          "e2e": REQUEST_LATENCY, "ttft": TIME_TO_FIRST_TOKEN, "prompt_tokens": PROMPT_EDGES}  # fmt: skip


def _device(
    level: float, memory: float, counters: str, running: bool, rng: random.Random
) -> dict[str, float]:
    sm = min(1.0, max(0.0, level + rng.gauss(0, 0.015)))
    dram = min(1.0, max(0.0, memory + rng.gauss(0, 0.015)))
    busy = 1.0 if running else 0.0
    power = {"power_watts": 150 + 500 * max(sm, 0.6 * dram), "power_limit_watts": 700.0}
    if counters == "default":  # GPU_UTIL and GR_ENGINE_ACTIVE: any kernel running, a coarse gauge
        return {"util": busy, "gr_engine_active": min(1.0, busy * (0.9 + 0.1 * sm)),
                "memory_active": dram, "memory_copy_util": dram, **power}  # fmt: skip
    if counters == "nvml":  # no DCP (profiling unavailable or held by another profiler)
        return {"util": busy, "memory_copy_util": dram, **power}
    if counters == "util":  # the oldest default: DCGM_FI_DEV_GPU_UTIL alone
        return {"util": busy}
    if counters == "power":  # power draw and its limit only
        return power
    if counters == "sm":  # a profiling set without the memory interface (DRAM_ACTIVE left out)
        return {"sm_active": sm, "tensor_active": 0.5 * sm, "util": busy}
    if counters == "amd":
        return {"util": busy, "sm_active": sm, "memory_active": dram, "power_watts": power["power_watts"]}
    return {"sm_active": sm, "tensor_active": 0.5 * sm, "gr_engine_active": min(1.0, sm + 0.05),
            "memory_active": dram, "util": busy}  # fmt: skip


def _edges(server: str) -> dict[str, tuple[float, ...]]:
    if server == "vllm":
        return _EDGES
    sglang = {"queue": SGLANG_QUEUE, "prefill": SGLANG_STAGE, "ttft": SGLANG_LATENCY, "e2e": SGLANG_LATENCY}
    return {**_EDGES, **sglang}


def simulate(w: World) -> Held:
    """Run ``w`` for its duration (module docstring)."""
    pools, held = [Pool(w, k) for k in range(w.endpoints)], Held(w)
    edges = _edges(w.server)
    hists = [{k: _Hist(e) for k, e in edges.items()} for _ in pools]
    probes: list[Req] = []
    reported = [0 for _ in pools]
    next_probe, next_scrape, clients_t, probe_no = w.probe_every / 2, SCRAPE, 0.0, 0
    for second in range(int(w.duration)):
        t = float(second)
        for pool in pools:
            _arrivals(pool, t, len(pools))
        if t >= next_probe:
            next_probe += w.probe_every
            pool, probe_no = pools[probe_no % len(pools)], probe_no + 1
            r = pool.new(t, probe=True)
            if pool.arrive(r, t):
                probes.append(r)
            else:
                held.runs.append(ProbeRun(t + r.front, retried=False, shed=True))
        for k, pool in enumerate(pools):
            pool.step(t)
            for r in pool.done[reported[k] :]:
                _observe(hists[k], r)
                if not r.probe and w.spans and pool.rng.random() < w.spans:
                    held.traffic.append(_span_sample(r))
            reported[k] = len(pool.done)
        if t >= next_scrape:
            next_scrape += SCRAPE
            for k, pool in enumerate(pools):
                held.pool.append(_interval(pool, hists[k], t))
                hists[k] = {name: _Hist(e) for name, e in edges.items()}
                _gpu_samples(held, pool, t)
        clients_t = t
    _probe_results(held, probes, clients_t)
    return held


def _arrivals(pool: Pool, t: float, share: int) -> None:
    """This second's arrivals at one endpoint (its share of the load)."""
    ld = pool.load(t)
    if ld.clients is not None:
        arrivals = max(0, ld.clients // share - len(pool.queue) - len(pool.running))
    else:
        arrivals = poisson(pool.rng, ld.rate / share)
    for _ in range(arrivals):
        pool.arrive(pool.new(t + pool.rng.random()), t)


def _span_sample(r: Req) -> Sample:
    """A real request as vLLM's spans give it (no gateway: TTFT and e2e are the server's)."""
    assert r.admitted is not None
    queue = r.admitted - r.arrive
    parts = {"tokenization": r.tokenize, "queue": queue, "prefill": r.prefill, "decode": r.decode}
    ttft = r.tokenize + queue + r.prefill
    return Sample("chat", r.arrive - r.tokenize, parts, SOURCE_SPANS, ttft, ttft + r.decode)


def _observe(hist: dict[str, _Hist], r: Req) -> None:
    assert r.admitted is not None
    queue = r.admitted - r.arrive
    hist["queue"].add(queue)
    hist["prefill"].add(r.prefill)
    hist["decode"].add(r.decode)
    hist["ttft"].add(r.tokenize + queue + r.prefill)
    hist["e2e"].add(r.tokenize + queue + r.prefill + r.decode)
    hist["prompt_tokens"].add(r.prompt)


def _interval(pool: Pool, hist: dict[str, _Hist], t: float) -> PoolPoint:
    ld = pool.load(t)
    histograms = {k: h.histogram() for k, h in hist.items() if k in _SURFACE[pool.w.server]}
    requests = histograms["e2e"].count
    point = PoolPoint(
        endpoint=pool.name,
        end=t,
        requests=requests,
        waiting=float(len(pool.queue)),
        running=float(len(pool.running)),
        kv_usage=max(min(1.0, pool.kv_used(t) / ld.kv_tokens), ld.kv_reported or 0.0),
        preemptions=None if pool.w.server == "sglang-0.4" else pool.preemptions,
        admission_rejections=pool.rejections if pool.w.server == "vllm" else None,
        http_status=_http(pool),
        prefix_hit_rate=ld.prefix_hit,
        histograms=histograms,
    )
    pool.preemptions = pool.rejections = 0.0
    pool.http = {}
    return point


def _http(pool: Pool) -> dict[str, float]:
    """The API server's answers: vLLM groups them by class, SGLang (0.5) counts exact codes."""
    if pool.w.server == "vllm":
        return dict(pool.http)
    if pool.w.server == "sglang":
        return {{"2xx": "200", "4xx": "429", "5xx": "500"}[k]: v for k, v in pool.http.items()}
    return {}


def _gpu_samples(held: Held, pool: Pool, t: float) -> None:
    w = held.world
    if w.counters == "none" or (w.gpu_down is not None and w.gpu_down[0] <= t < w.gpu_down[1]):
        return
    if round(t / SCRAPE) % max(1, round(w.gpu_every / SCRAPE)):
        return
    level = pool.activity(t)
    hot = w.hot_gpu and pool.faulty and t >= w.onset
    for g in range(w.gpus):
        value = 0.98 if hot and g == 3 else level
        if hot and g != 3:
            value = min(level, 0.3)
        values = _device(value, pool.memory(t, value), w.counters, bool(pool.running), pool.rng)
        uuid = f"GPU-{pool.index}{g:03d}" if pool.index else f"GPU-{g:04d}"
        held.gpus.append(GpuPoint(pool.name, t, f"{pool.host}/{g}", uuid, values))


def _probe_results(held: Held, probes: list[Req], end: float) -> None:
    w = held.world
    for r in probes:
        start = r.arrive - r.front - r.retry
        if r.admitted is None or r.done - start > w.probe_timeout:
            at = start + w.probe_timeout
            if at <= end:
                held.runs.append(ProbeRun(at, retried=r.retry > 0))
            continue
        queue = r.admitted - r.arrive
        ttft = r.retry + r.front + queue + r.prefill
        e2e = ttft + r.decode + r.tools
        # per-request metrics: the API server's preprocessing is inside the network part
        parts = {
            "retry": r.retry,
            "network": r.front,
            "queue": queue,
            "prefill": r.prefill,
            "decode": r.decode,
        }
        if w.tools:  # the server's turnaround after each tool result; the tools' own time is in e2e
            parts["tool_turnaround"] = 0.05 * 3
        if not w.probe_view:  # the client's timings only: no server view of the stages
            parts = {"retry": r.retry}
        held.probes.append(Sample("chat", start, parts, SOURCE_METRICS if w.probe_view else None, ttft, e2e))
        held.runs.append(ProbeRun(start + e2e, retried=r.retry > 0))
    held.probes.sort(key=lambda s: s.at)
    held.runs.sort(key=lambda r: r.at)


def inputs_at(held: Held, end: float, window: float = 900.0, recent: float = 300.0) -> Inputs:
    """The verdict's inputs at ``end``, cut as the store loader cuts them."""
    w = held.world

    def between(rows: list, key: str, lo: float) -> tuple:  # type: ignore[type-arg]
        return tuple(r for r in rows if lo < getattr(r, key) <= end)

    # a probe counts once its outcome is known (the store loader's rule), not when it started
    known = tuple(s for s in between(held.probes, "at", end - window) if s.at + (s.e2e or 0.0) <= end)
    peaks: dict[str, float] = {}
    for p in between(held.pool, "end", end - PEAK_WINDOW):
        peaks[p.endpoint] = max(peaks.get(p.endpoint, 0.0), p.running or 0.0)

    return Inputs(
        request_class="chat",
        end=end,
        window=window,
        recent=recent,
        objectives=w.objectives,
        tools=w.tools,
        probes=known,
        traffic=tuple(s for s in between(held.traffic, "at", end - recent) if s.at + (s.e2e or 0.0) <= end),
        runs=between(held.runs, "at", end - window),
        pool=between(held.pool, "end", end - max(window, 2 * recent)),
        gpus=between(held.gpus, "time", end - max(window, recent)),
        gpu_configured=w.counters != "none",
        running_peak=sum(peaks.values()) if peaks else None,
        running_peaks=peaks,
    )
