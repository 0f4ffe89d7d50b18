"""The pool a :mod:`monitor.sim.worlds` world simulates, one second at a time: its load before and
after the fault (:class:`Load`), the world itself (:class:`World`), and the pool's queue, batch and
KV cache (:class:`Pool`).

Requests arrive (open loop at a rate, or a closed loop of clients), wait in a FIFO queue, are
admitted while the batch has slots, the KV cache room and the scheduler admits; they prefill at a
token rate and decode at a time per output token that grows with the batch. vLLM allocates KV
blocks as a request grows, so a full cache preempts its newest request (recomputed later) rather
than refusing it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

from monitor.bottleneck.inputs import Objectives


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
    #: the engine's steps are bound by memory bandwidth (decode reading long KV caches, MoE
    #: weights): the memory interface at 95 % of its cycles, the SMs at half
    memory_bound: bool = False
    #: the KV gauge reads at least this (blocks held by a prefix cache counted as used; None: the
    #: running requests' tokens only)
    kv_reported: float | None = None


@dataclass(frozen=True)
class World:
    name: str
    #: acceptable verdicts once the fault holds (the first is the one expected)
    expect: tuple[str, ...]
    before: Load = Load()
    after: Load | None = None  # the fault (None: a healthy world)
    #: verdicts that must be among the causes too (two causes at once)
    also: tuple[str, ...] = ()
    #: "profiling", "default" (dcgm-exporter defaults), "nvml" (the default set without its DCP
    #: rows: GPU_UTIL, MEM_COPY_UTIL, power), "amd", "none"
    counters: str = "profiling"
    gpus: int = 8
    hot_gpu: bool = False  # one GPU of the group pinned at 98 % (a straggler rank)
    dips: bool = False  # activity dips to 40 % for 4 s of every 20 s
    slots: int = 64
    objectives: Objectives = field(default_factory=lambda: Objectives(ttft=2.5, e2e=40.0))
    tools: bool = False
    probe_every: float = 30.0
    probe_timeout: float = 120.0
    #: endpoints serving the class (each its own engine, GPUs and page; the load split evenly)
    endpoints: int = 1
    #: the only endpoint the fault hits (None: every endpoint)
    faulty: int | None = None
    #: what the pool's /metrics page holds (docs/bottleneck.md "Scenarios"): "vllm"; "sglang"
    #: (0.5, --enable-metrics: queue-time and prefill-forward histograms with SGLang's buckets, no
    #: decode histogram, retractions, exact HTTP codes, no admission counter); "sglang-0.4" (TTFT
    #: and e2e histograms and the running/queue/token-usage gauges only)
    server: str = "vllm"
    #: probes carry the server's view (vLLM's per-request metrics or a trace); False: client
    #: timings only (SGLang without tracing)
    probe_view: bool = True
    #: share of real requests whose server spans reach the monitor (OTLP tracing; 0: none)
    spans: float = 0.0
    #: the GPU exporter is scraped every this many seconds (a multiple of the 15 s scrape)
    gpu_every: float = 15.0
    #: the GPU exporter answers no scrape in [from, to) (the monitor's own fault)
    gpu_down: tuple[float, float] | None = None
    #: open-loop rate over the hour: rising linearly from ``before.rate`` to this (a diurnal ramp)
    ramp_to: float | None = None
    #: on/off arrivals (period seconds, high): the rate x high for a period, x (2 - high) for the
    #: next (the same mean); the whole hour of a world without a fault, else while the fault holds
    burst: tuple[float, float] | None = None
    onset: float = 1200.0
    until: float | None = None  # the fault ends here (None: it lasts to the end)
    duration: float = 3600.0
    seed: int = 1


@dataclass
class Req:
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


class Pool:
    def __init__(self, w: World, index: int = 0) -> None:
        self.w, self.rng = w, random.Random(w.seed + 1000 * index)
        self.index = index
        #: the endpoint's name on the page and its host (one endpoint: "pool" on "node-a")
        self.name = "pool" if w.endpoints == 1 else f"pool-{index}"
        self.host = f"node-{chr(ord('a') + index)}"
        self.faulty = w.faulty is None or w.faulty == index
        self.queue: list[Req] = []
        self.running: list[Req] = []
        self.done: list[Req] = []
        self.rejections = 0.0
        self.preemptions = 0.0
        self.retry_later: list[Req] = []
        #: the API server's answers by status since the last scrape (vLLM groups them)
        self.http: dict[str, float] = {}

    def load(self, t: float) -> Load:
        w = self.w
        held = self.faulty and w.after is not None and t >= w.onset and (w.until is None or t < w.until)
        ld = w.after if held and w.after is not None else w.before
        if w.ramp_to is not None:
            ld = replace(ld, rate=ld.rate + (w.ramp_to - ld.rate) * t / w.duration)
        if w.burst is not None and (held or w.after is None):
            period, high = w.burst
            ld = replace(ld, rate=ld.rate * (high if (t // period) % 2 == 0 else 2 - high))
        return ld

    def new(self, t: float, probe: bool = False) -> Req:
        ld = self.load(t)
        prompt = min(120_000.0, ld.prompt * math.exp(self.rng.gauss(0, 0.6)))
        if ld.long_share and self.rng.random() < ld.long_share:
            prompt = min(120_000.0, prompt * 20)
        output = max(8.0, ld.output * math.exp(self.rng.gauss(0, 0.4)))
        front = ld.network * (1 + 0.2 * self.rng.random()) + ld.tokenize * (1 + 0.2 * self.rng.random())
        if ld.outliers and self.rng.random() < ld.outliers:
            front += 0.15 + 0.08 * self.rng.random()
        tools = 3 * ld.tool_seconds * (1 + 0.1 * self.rng.random()) if probe and self.w.tools else 0.0
        r = Req(t + front, prompt, output, probe, front, ld.tokenize, tools=tools)
        return r

    def arrive(self, r: Req, t: float) -> bool:
        """Queue ``r`` unless it is refused (then a gateway may retry it); False when refused."""
        ld = self.load(t)
        failed = ld.errors and self.rng.random() < ld.errors
        refused = not failed and ld.shed and self.rng.random() < ld.shed
        if failed or refused:
            self.rejections += 1 if refused else 0
            status = "4xx" if refused else "5xx"
            self.http[status] = self.http.get(status, 0.0) + 1
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
            self.http["2xx"] = self.http.get("2xx", 0.0) + 1
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

    def memory(self, t: float, activity: float) -> float:
        """The memory interface's share of active cycles (with ``activity``, the SMs')."""
        return 0.95 if self.load(t).memory_bound else 0.25 + 0.5 * activity

    def activity(self, t: float) -> float:
        ld = self.load(t)
        if ld.memory_bound:
            base = 0.5 if self.running else 0.0
        elif ld.slowdown > 1.5 and not self.w.hot_gpu:
            base = 0.97
        else:
            fill = len(self.running) / self.w.slots
            base = 0.2 + 0.7 * fill if self.running else 0.0
        if self.w.dips and t >= self.w.onset and t % 20 < 4:
            base = 0.4
        return base


def poisson(rng: random.Random, lam: float) -> int:
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1
