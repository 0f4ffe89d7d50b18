"""What one class's instant holds for a verdict: :func:`gather` reduces :class:`~monitor.bottleneck.
inputs.Inputs` to an :class:`Evidence` — the probes' tail shares and stage seconds, real
traffic's, the pool's queue, shedding, KV cache and stage P95s (:mod:`.pool`), and its GPUs
(:mod:`.gpu`). The rules (:mod:`monitor.bottleneck.rules`) read nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.bottleneck.gpu import GpuWindow, gpu_window
from monitor.bottleneck.inputs import GPU_WINDOW, GpuPoint, Inputs, Objectives, PoolPoint
from monitor.bottleneck.pool import PoolWindow, pool_window
from monitor.bottleneck.stages import StageTail, stage_tail
from monitor.bottleneck.tail import MIN_REQUESTS, MIN_REQUESTS_P99, TailShare, attribute_class
from monitor.slo import numbers

#: Where a cause's seconds came from (the verdict names its evidence).
PROBES = "probes"
TRAFFIC = "real-traffic spans"
SERVER = "server histograms"
GAUGES = "server gauges"
GPUS = "GPU exporter"


@dataclass(frozen=True)
class Evidence:
    """One class at ``end``: see the module docstring."""

    request_class: str
    end: float
    window: float
    recent: float
    objectives: Objectives
    tools: bool
    shared_with: tuple[str, ...]
    tail: tuple[TailShare, ...]  # the probes' shares (P95+, P99+, <= P50) over the tail window
    probe_ttft: StageTail
    probe_e2e: StageTail
    traffic_ttft: StageTail
    traffic_e2e: StageTail
    pool: PoolWindow
    gpu: GpuWindow
    gpu_configured: bool
    #: the GPUs over the whole recent window (the queue's evidence window): were they ever busy?
    gpu_recent: GpuWindow
    runs: int
    retried: int
    shed: int
    #: every scrape interval and GPU sample read (both recent windows): when requests waited, and
    #: what the GPUs did at those moments
    intervals: tuple[PoolPoint, ...] = ()
    gpu_points: tuple[GpuPoint, ...] = ()

    @property
    def recent_start(self) -> float:
        return self.end - self.recent

    def band(self, metric: str, band: str = "p95") -> TailShare | None:
        return next((s for s in self.tail if s.metric == metric and s.band == band), None)

    @property
    def ttft_stage(self) -> str | None:
        s = self.band("ttft")
        return None if s is None else s.dominant

    @property
    def e2e_stage(self) -> str | None:
        s = self.band("e2e")
        return None if s is None else s.dominant

    def enough(self, tail: StageTail) -> bool:
        return tail.requests >= MIN_REQUESTS

    @property
    def server_enough(self) -> bool:
        return self.pool.observed >= MIN_REQUESTS

    def missing(self) -> tuple[str, ...]:
        """What the verdict lacked, in words (empty when a tail source had enough requests)."""
        if self.enough(self.probe_ttft) or self.enough(self.traffic_ttft) or self.server_enough:
            return ()
        return (
            f"{self.probe_ttft.requests} probe request(s) with a server view in "
            f"{self.window / 60:g} min ({MIN_REQUESTS} needed)",
            f"{self.traffic_ttft.requests} real-traffic request(s) from spans in {self.recent / 60:g} min",
            f"{self.pool.observed:g} request(s) in the server's histograms in {self.recent / 60:g} min "
            f"({self.pool.intervals} scrape interval(s))",
        )

    def _leads(self, band: str) -> tuple[list[str], list[TailShare]]:
        parts, missing = [], []
        for metric, name in (("ttft", "TTFT"), ("e2e", "e2e")):
            s = self.band(metric, band)
            if s is not None and s.dominant is not None:
                parts.append(
                    f"{name} {numbers.share(dict(s.shares)[s.dominant])} {s.dominant.replace('_', ' ')}"
                )
            elif s is not None:
                missing.append(s)
        return parts, missing

    def summary(self) -> str:
        """``probes P95+ TTFT 71% queue; server P95 queue 2.10 s, prefill 0.40 s; queue +3.5
        waiting (now 6); hottest GPU ... busy (...)``: what the verdict read, in one line."""
        parts, _ = self._leads("p95")
        out = [
            f"probes P95+ {', '.join(parts)}" if parts else f"probes: {self.probe_ttft.requests} with a view"
        ]
        far, missing = self._leads("p99")
        if parts and far:
            out.append(f"P99+ {', '.join(far)}")
        elif parts and missing:
            out.append(f"P99+: not enough requests ({missing[0].requests} of {MIN_REQUESTS_P99})")
        p = self.pool
        if p.stage_p95:
            shown = ", ".join(
                f"{k} {v:.2f} s" for k, v in p.stage_p95.items() if k in ("queue", "prefill", "decode")
            )
            pool = f" (pool shared with {', '.join(self.shared_with)})" if self.shared_with else ""
            out.append(f"server P95 {shown} over {p.observed:g} requests{pool}")
        if p.waiting_growth is not None:
            out.append(f"queue {p.waiting_growth:+.1f} waiting (now {p.waiting_now or 0:.0f})")
        if self.gpu.read:
            out.append(self.gpu.describe())
        if p.kv_usage is not None:
            out.append(f"KV {p.kv_usage:.0%} used")
        if p.preemptions:
            out.append(f"{p.preemptions:g} preemptions")
        if p.rejections:
            out.append(f"{p.rejections:g} admission rejections")
        if self.shed or self.retried:
            out.append(f"{self.retried}/{self.runs} runs retried, {self.shed} refused for load")
        return "; ".join(out)

    def to_json(self) -> dict[str, object]:
        tail = {f"{s.metric}_{s.band}": dict(s.shares) for s in self.tail if s.why_none is None}
        p, hottest = self.pool, self.gpu.hottest
        return {
            "window_seconds": self.window,
            "recent_seconds": self.recent,
            "ttft_stage": self.ttft_stage,
            "e2e_stage": self.e2e_stage,
            "tail_shares": tail,
            "probe_requests": self.probe_ttft.requests,
            "traffic_requests": self.traffic_ttft.requests,
            "server_requests": p.observed,
            "server_stage_p95": p.stage_p95,
            "runs": self.runs,
            "retried": self.retried,
            "shed": self.shed,
            "queue_growth": p.waiting_growth,
            "waiting_now": p.waiting_now,
            "admission_rejections": p.rejections,
            "preemptions": p.preemptions,
            "kv_usage": p.kv_usage,
            "eviction_before_reuse": p.eviction_before_reuse,
            "prefix_hit_rate": p.prefix_hit,
            "prefix_hit_rate_before": p.prefix_hit_before,
            "gpu_saturated": self.gpu.saturated if self.gpu.read else None,
            "hottest_gpu": None if hottest is None else {
                "device": hottest.device, "uuid": hottest.uuid, "busy_share": hottest.busy_share,
                "activity": hottest.activity, "counter": hottest.counter, "because": hottest.because},
        }  # fmt: skip


def gather(i: Inputs) -> Evidence:
    """The evidence of ``i.request_class`` at ``i.end`` (module docstring)."""
    start = i.end - i.window
    probes = [s for s in i.probes if s.request_class == i.request_class and start < s.at <= i.end and s.view]
    traffic = [s for s in i.traffic if s.request_class == i.request_class and i.recent_start < s.at <= i.end]
    runs = [r for r in i.runs if start < r.at <= i.end]
    return Evidence(
        request_class=i.request_class,
        end=i.end,
        window=i.window,
        recent=i.recent,
        objectives=i.objectives,
        tools=i.tools,
        shared_with=i.shared_with,
        tail=attribute_class(i.request_class, probes),
        probe_ttft=stage_tail(probes, "ttft", PROBES),
        probe_e2e=stage_tail(probes, "e2e", PROBES),
        traffic_ttft=stage_tail(traffic, "ttft", TRAFFIC),
        traffic_e2e=stage_tail(traffic, "e2e", TRAFFIC),
        pool=pool_window(
            i.pool, i.recent_start, i.end, i.running_peak, min(i.recent, i.state), i.running_peaks
        ),
        gpu=gpu_window(i.gpus, i.end - min(i.recent, i.state), i.end, live=i.state <= GPU_WINDOW),
        gpu_configured=i.gpu_configured,
        gpu_recent=gpu_window(i.gpus, i.recent_start, i.end, live=False),
        runs=len(runs),
        retried=sum(1 for r in runs if r.retried),
        shed=sum(1 for r in runs if r.shed),
        intervals=i.pool,
        gpu_points=i.gpus,
    )
