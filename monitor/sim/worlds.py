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
from dataclasses import dataclass, field

from monitor.bottleneck.inputs import PEAK_WINDOW, GpuPoint, Inputs, PoolPoint, ProbeRun
from monitor.bottleneck.tail import SOURCE_METRICS, Sample
from monitor.probes.confirm import Confirmations
from monitor.scrape.signals import Histogram
from monitor.sim import world_surface as surface
from monitor.sim.world_pool import Load, Pool, Req, World, poisson

__all__ = ["SCRAPE", "Held", "Load", "World", "inputs_at", "simulate"]

SCRAPE = 15.0


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


def simulate(w: World) -> Held:
    """Run ``w`` for its duration (module docstring)."""
    pools, held = [Pool(w, k) for k in range(w.endpoints)], Held(w)
    edges = surface.edges(w.server)
    hists = [{k: _Hist(e) for k, e in edges.items()} for _ in pools]
    probes: list[Req] = []
    reported = [0 for _ in pools]
    next_probe, next_scrape, clients_t, probe_no = w.probe_every / 2, SCRAPE, 0.0, 0
    confirm, extra = Confirmations(), list[float]()  # the service's confirmation rounds
    for second in range(int(w.duration)):
        t = float(second)
        for pool in pools:
            _arrivals(pool, t, len(pools))
        due = extra.count(t) + (t >= next_probe)
        if t >= next_probe:
            next_probe += w.probe_every
        for _ in range(due):
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
                    held.traffic.append(surface.span_sample(r))
            reported[k] = len(pool.done)
        if t >= next_scrape:
            next_scrape += SCRAPE
            for k, pool in enumerate(pools):
                held.pool.append(_interval(pool, hists[k], t))
                if _refused(held.pool[-1]) and confirm.due([w.name], t):
                    extra += [float(math.ceil(at)) for at in confirm.times(t)]
                hists[k] = {name: _Hist(e) for name, e in edges.items()}
                _gpu_samples(held, pool, t)
        clients_t = t
    _probe_results(held, probes, clients_t)
    return held


def _refused(p: PoolPoint) -> bool:
    """A scrape interval the service reads as refusing work (monitor.service.confirm_rounds)."""
    codes = sum(p.http_status.get(c, 0.0) for c in ("429", "503"))
    return bool(p.admission_rejections) or codes > 0


def _arrivals(pool: Pool, t: float, share: int) -> None:
    """This second's arrivals at one endpoint (its share of the load)."""
    ld = pool.load(t)
    if ld.clients is not None:
        arrivals = max(0, ld.clients // share - len(pool.queue) - len(pool.running))
    else:
        arrivals = poisson(pool.rng, ld.rate / share)
    for _ in range(arrivals):
        pool.arrive(pool.new(t + pool.rng.random()), t)


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
    histograms = {k: h.histogram() for k, h in hist.items() if k in surface.SURFACE[pool.w.server]}
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
        http_status=surface.http(pool),
        prefix_hit_rate=ld.prefix_hit,
        histograms=histograms,
    )
    pool.preemptions = pool.rejections = 0.0
    pool.http = {}
    return point


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
        values = surface.device(value, pool.memory(t, value), w.counters, bool(pool.running), pool.rng)
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
