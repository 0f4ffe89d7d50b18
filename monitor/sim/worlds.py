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

A world's fault starts at ``onset`` and lasts to the end. :func:`simulate` returns what the store
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
from dataclasses import dataclass, field, replace

from monitor.bottleneck.inputs import PEAK_WINDOW, GpuPoint, Inputs, Objectives, PoolPoint, ProbeRun
from monitor.bottleneck.tail import SOURCE_METRICS, Sample
from monitor.scrape.signals import Histogram
from monitor.vllm_buckets import REQUEST_LATENCY, TIME_TO_FIRST_TOKEN, request_tokens

SCRAPE = 15.0
PROMPT_EDGES = request_tokens(131072)


@dataclass(frozen=True)
class Load:
    """Traffic and the pool's own speed (before or after the onset)."""

    rate: float = 4.0  # open-loop arrivals per second (ignored with ``clients``)
    clients: int | None = None  # a closed loop: this many requests in the pool at all times
    prompt: float = 2000.0  # median prompt tokens (lognormal, sigma 0.6)
    output: float = 300.0  # median output tokens (lognormal, sigma 0.4)
    prefix_hit: float = 0.6  # share of prompt tokens found in the prefix cache
    network: float = 0.02  # client <-> API server (the proxy's part)
    tokenize: float = 0.01  # the API server's preprocessing
    slowdown: float = 1.0  # engine steps this much slower (compute saturation, a straggler GPU)
    admit_per_second: float | None = None  # a stalling scheduler admits at most this many per s
    kv_tokens: float = 400_000.0  # KV capacity (tokens)
    shed: float = 0.0  # share of requests refused with 429 at admission
    errors: float = 0.0  # share of requests answered 500 (a failing replica behind the gateway)
    gateway_retry: bool = False  # a gateway retries refused requests (after 1 s)
    tool_seconds: float = 0.0  # per tool round of an agent probe (3 rounds)
    outliers: float = 0.0  # share of requests with 0.15-0.23 s more at the proxy (healthy noise)
    long_share: float = 0.0  # share of requests whose prompt is 20x the median (a mixed class)


@dataclass(frozen=True)
class World:
    name: str
    #: acceptable verdicts once the fault holds (the first is the one expected)
    expect: tuple[str, ...]
    before: Load = Load()
    after: Load | None = None  # the fault (None: a healthy world)
    #: verdicts that must be among the causes too (two causes at once)
    also: tuple[str, ...] = ()
    counters: str = "profiling"  # "profiling", "default" (dcgm-exporter defaults), "amd", "none"
    gpus: int = 8
    hot_gpu: bool = False  # one GPU of the group pinned at 98 % (a straggler rank)
    dips: bool = False  # activity dips to 40 % for 4 s of every 20 s
    slots: int = 64
    objectives: Objectives = field(default_factory=lambda: Objectives(ttft=2.5, e2e=40.0))
    tools: bool = False
    probe_every: float = 30.0
    probe_timeout: float = 120.0
    onset: float = 1200.0
    until: float | None = None  # the fault ends here (None: it lasts to the end)
    duration: float = 3600.0
    seed: int = 1


@dataclass
class _Req:
    arrive: float  # at the engine (after the front)
    prompt: float
    output: float
    probe: bool = False
    front: float = 0.0  # network + tokenize
    tokenize: float = 0.0
    retry: float = 0.0
    tools: float = 0.0
    admitted: float | None = None
    prefill: float = 0.0
    decode: float = 0.0
    preempted: int = 0

    @property
    def done(self) -> float:
        assert self.admitted is not None
        return self.admitted + self.prefill + self.decode


@dataclass
class Held:
    """What the store would hold after a world ran."""

    world: World
    pool: list[PoolPoint] = field(default_factory=list)
    gpus: list[GpuPoint] = field(default_factory=list)
    probes: list[Sample] = field(default_factory=list)
    runs: list[ProbeRun] = field(default_factory=list)


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


_EDGES = {"queue": REQUEST_LATENCY, "prefill": REQUEST_LATENCY, "decode": REQUEST_LATENCY,
          "e2e": REQUEST_LATENCY, "ttft": TIME_TO_FIRST_TOKEN, "prompt_tokens": PROMPT_EDGES}  # fmt: skip


class _Pool:
    def __init__(self, w: World) -> None:
        self.w, self.rng = w, random.Random(w.seed)
        self.queue: list[_Req] = []
        self.running: list[_Req] = []
        self.done: list[_Req] = []
        self.rejections = 0.0
        self.preemptions = 0.0
        self.retry_later: list[_Req] = []

    def load(self, t: float) -> Load:
        w = self.w
        held = w.after is not None and t >= w.onset and (w.until is None or t < w.until)
        return w.after if held and w.after is not None else w.before

    def new(self, t: float, probe: bool = False) -> _Req:
        ld = self.load(t)
        prompt = min(120_000.0, ld.prompt * math.exp(self.rng.gauss(0, 0.6)))
        if ld.long_share and self.rng.random() < ld.long_share:
            prompt = min(120_000.0, prompt * 20)
        output = max(8.0, ld.output * math.exp(self.rng.gauss(0, 0.4)))
        front = ld.network * (1 + 0.2 * self.rng.random()) + ld.tokenize * (1 + 0.2 * self.rng.random())
        if ld.outliers and self.rng.random() < ld.outliers:
            front += 0.15 + 0.08 * self.rng.random()
        tools = 3 * ld.tool_seconds * (1 + 0.1 * self.rng.random()) if probe and self.w.tools else 0.0
        r = _Req(t + front, prompt, output, probe, front, ld.tokenize, tools=tools)
        return r

    def arrive(self, r: _Req, t: float) -> bool:
        """Queue ``r`` unless it is refused (then a gateway may retry it); False when refused."""
        ld = self.load(t)
        failed = ld.errors and self.rng.random() < ld.errors
        refused = not failed and ld.shed and self.rng.random() < ld.shed
        if failed or refused:
            self.rejections += 1 if refused else 0
            if ld.gateway_retry:
                r.retry += 1.0
                r.arrive += 1.0
                self.retry_later.append(r)
                return True
            return False
        self.queue.append(r)
        return True

    def kv_used(self, t: float) -> float:
        """Tokens held: each running request's prompt and what it decoded so far (vLLM allocates
        blocks as a request grows, so a full pool preempts rather than refuses)."""
        held = 0.0
        for r in self.running:
            assert r.admitted is not None
            into = (t - r.admitted - r.prefill) / r.decode if r.decode > 0 else 1.0
            held += r.prompt + r.output * min(1.0, max(0.0, into))
        return held

    def step(self, t: float) -> None:
        ld = self.load(t)
        for r in [r for r in self.retry_later if r.arrive < t + 1]:  # back within this second
            self.retry_later.remove(r)
            self.arrive(r, t)
        finished = [r for r in self.running if r.done <= t]
        for r in finished:
            self.running.remove(r)
            self.done.append(r)
        budget = math.inf if ld.admit_per_second is None else ld.admit_per_second
        if ld.admit_per_second is not None and self.rng.random() < ld.admit_per_second % 1:
            budget = math.floor(budget) + 1
        else:
            budget = math.floor(budget) if budget != math.inf else budget
        while self.queue and len(self.running) < self.w.slots and budget > 0:
            r = self.queue[0]
            if self.running and self.kv_used(t) + r.prompt > 0.99 * ld.kv_tokens:
                break
            self.queue.pop(0)
            budget -= 1
            fill = (len(self.running) + 1) / self.w.slots
            r.admitted = max(t, r.arrive)
            r.prefill = r.prompt * (1 - ld.prefix_hit) / 20_000.0 * ld.slowdown + 0.03
            r.decode = r.output * 0.03 * (0.7 + 0.6 * fill) * ld.slowdown
            self.running.append(r)
        while len(self.running) > 1 and self.kv_used(t) > ld.kv_tokens:
            victim = max(self.running, key=lambda r: r.admitted or 0.0)  # the newest is preempted
            self.running.remove(victim)
            victim.preempted += 1
            self.preemptions += 1
            victim.admitted = None
            self.queue.insert(0, victim)

    def activity(self, t: float) -> float:
        ld = self.load(t)
        if ld.slowdown > 1.5 and not self.w.hot_gpu:
            base = 0.97
        else:
            fill = len(self.running) / self.w.slots
            base = 0.2 + 0.7 * fill if self.running else 0.0
        if self.w.dips and t >= self.w.onset and t % 20 < 4:
            base = 0.4
        return base


def _device(values: float, counters: str, running: bool, rng: random.Random) -> dict[str, float]:
    sm = min(1.0, max(0.0, values + rng.gauss(0, 0.015)))
    if counters == "default":  # GPU_UTIL and GR_ENGINE_ACTIVE: any kernel running, a coarse gauge
        busy = 1.0 if running else 0.0
        return {"util": busy, "gr_engine_active": min(1.0, busy * (0.9 + 0.1 * sm)),
                "memory_copy_util": 0.3 + 0.5 * sm, "power_watts": 150 + 500 * sm,
                "power_limit_watts": 700.0}  # fmt: skip
    if counters == "amd":
        return {"util": 1.0 if running else 0.0, "sm_active": sm, "power_watts": 200 + 500 * sm}
    return {"sm_active": sm, "tensor_active": 0.5 * sm, "gr_engine_active": min(1.0, sm + 0.05),
            "util": 1.0 if running else 0.0}  # fmt: skip


def simulate(w: World) -> Held:
    """Run ``w`` for its duration (module docstring)."""
    pool, held = _Pool(w), Held(w)
    hist = {k: _Hist(e) for k, e in _EDGES.items()}
    probes: list[_Req] = []
    reported: set[int] = set()
    next_probe, next_scrape, clients_t = w.probe_every / 2, SCRAPE, 0.0
    for second in range(int(w.duration)):
        t = float(second)
        ld = pool.load(t)
        if ld.clients is not None:
            need = ld.clients - len(pool.queue) - len(pool.running)
            arrivals = max(0, need)
        else:
            arrivals = _poisson(pool.rng, ld.rate)
        for _ in range(arrivals):
            pool.arrive(pool.new(t + pool.rng.random()), t)
        if t >= next_probe:
            next_probe += w.probe_every
            r = pool.new(t, probe=True)
            if pool.arrive(r, t):
                probes.append(r)
            else:
                held.runs.append(ProbeRun(t + r.front, retried=False, shed=True))
        pool.step(t)
        for r in pool.done[len(reported) :]:
            reported.add(id(r))
            _observe(hist, r)
        if t >= next_scrape:
            next_scrape += SCRAPE
            held.pool.append(_interval(pool, hist, t))
            hist = {k: _Hist(e) for k, e in _EDGES.items()}
            _gpu_samples(held, pool, t)
        clients_t = t
    _probe_results(held, probes, clients_t)
    return held


def _poisson(rng: random.Random, lam: float) -> int:
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _observe(hist: dict[str, _Hist], r: _Req) -> None:
    assert r.admitted is not None
    queue = r.admitted - r.arrive
    hist["queue"].add(queue)
    hist["prefill"].add(r.prefill)
    hist["decode"].add(r.decode)
    hist["ttft"].add(r.tokenize + queue + r.prefill)
    hist["e2e"].add(r.tokenize + queue + r.prefill + r.decode)
    hist["prompt_tokens"].add(r.prompt)


def _interval(pool: _Pool, hist: dict[str, _Hist], t: float) -> PoolPoint:
    ld = pool.load(t)
    histograms = {k: h.histogram() for k, h in hist.items()}
    requests = histograms["e2e"].count
    point = PoolPoint(
        endpoint="pool",
        end=t,
        requests=requests,
        waiting=float(len(pool.queue)),
        running=float(len(pool.running)),
        kv_usage=min(1.0, pool.kv_used(t) / ld.kv_tokens),
        preemptions=pool.preemptions,
        admission_rejections=pool.rejections,
        prefix_hit_rate=ld.prefix_hit,
        histograms=histograms,
    )
    pool.preemptions = pool.rejections = 0.0
    return point


def _gpu_samples(held: Held, pool: _Pool, t: float) -> None:
    w = held.world
    if w.counters == "none":
        return
    level = pool.activity(t)
    for g in range(w.gpus):
        value = 0.98 if w.hot_gpu and g == 3 and t >= w.onset else level
        if w.hot_gpu and g != 3 and t >= w.onset:
            value = min(level, 0.3)
        values = _device(value, w.counters, bool(pool.running), pool.rng)
        held.gpus.append(GpuPoint("pool", t, f"node-a/{g}", f"GPU-{g:04d}", values))


def _probe_results(held: Held, probes: list[_Req], end: float) -> None:
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
        held.probes.append(Sample("chat", start, parts, SOURCE_METRICS, ttft, e2e))
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

    return Inputs(
        request_class="chat",
        end=end,
        window=window,
        recent=recent,
        objectives=w.objectives,
        tools=w.tools,
        probes=known,
        runs=between(held.runs, "at", end - window),
        pool=between(held.pool, "end", end - 2 * recent),
        gpus=between(held.gpus, "time", end - recent),
        gpu_configured=w.counters != "none",
        running_peak=max(
            (p.running or 0.0 for p in between(held.pool, "end", end - PEAK_WINDOW)), default=None
        ),
    )


def healthy(name: str = "healthy", **kw: object) -> World:
    return replace(World(name, ("none",)), **kw)  # type: ignore[arg-type]
