"""What one class's window holds for a verdict: its tail attribution and its pool's signals.

:func:`gather` reduces a window's probe samples, scrape intervals and GPU readings of the
class's endpoints to an :class:`Evidence`; the rules (:mod:`monitor.bottleneck.rules`) read
nothing else. Every field is None when the window has no reading of it (no GPU exporter, a
server without the ``kv_block_*`` families), and a rule that needs it does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from monitor.bottleneck.tail import MIN_REQUESTS_P99, Sample, TailShare, attribute_class
from monitor.scrape.gpu_signals import GpuSignals
from monitor.scrape.signals import Signals

#: A prefix-cache hit rate counts as collapsed at a quarter of the previous window's, when that
#: was at least PREFIX_BASELINE (a pool whose prompts never share a prefix has nothing to lose).
PREFIX_DROP = 0.25
PREFIX_BASELINE = 0.2
#: A stage *owns* a tail when it holds at least this share of it (a majority with a margin: the P95+
#: band of a window is a handful of requests, and a stage at half the tail is a near tie).
OWNS = 0.6


@dataclass(frozen=True)
class Evidence:
    """One class over one window (``end - window``, ``end``]."""

    request_class: str
    end: float
    window: float
    tail: tuple[TailShare, ...]  # the class's TTFT and e2e shares, P95+, P99+ and <= P50
    runs: int = 0  # probe runs completed in the window (answered or not)
    retried: int = 0  # of which needed more than one attempt
    tools: bool = False  # the class runs tool loops (agent sessions): its "other" is the application's
    sm_active: float | None = None  # mean SM activity of the class's GPUs (0..1)
    tensor_active: float | None = None
    #: requests waiting (vLLM's num_requests_waiting, summed over engines): the mean over the later
    #: half of the window's scrape intervals minus the mean over the earlier half (queue_growth())
    queue_growth: float | None = None
    preemptions: float | None = None  # requests preempted in the class's pools over the window
    eviction_before_reuse: float | None = None  # share of evicted KV blocks idle <= the reuse gap
    prefix_hit_rate: float | None = None  # over the window (hits / queries)
    prefix_hit_before: float | None = None  # over the window before it
    notes: tuple[str, ...] = field(default_factory=tuple)

    def band(self, metric: str, band: str = "p95") -> TailShare | None:
        return next((s for s in self.tail if s.metric == metric and s.band == band), None)

    def _stage(self, metric: str) -> str | None:
        s = self.band(metric)
        return None if s is None else s.dominant

    def _owner(self, metric: str) -> str | None:
        s = self.band(metric)
        stage = None if s is None else s.dominant
        return stage if s is not None and stage is not None and dict(s.shares)[stage] >= OWNS else None

    @property
    def ttft_owner(self) -> str | None:
        """The stage holding at least :data:`OWNS` of the TTFT tail (None: none does)."""
        return self._owner("ttft")

    @property
    def e2e_owner(self) -> str | None:
        return self._owner("e2e")

    @property
    def ttft_stage(self) -> str | None:
        """The stage with the largest share of the TTFT tail (None: not attributed)."""
        return self._stage("ttft")

    @property
    def e2e_stage(self) -> str | None:
        return self._stage("e2e")

    @property
    def retried_share(self) -> float:
        return self.retried / self.runs if self.runs else 0.0

    @property
    def prefix_collapsed(self) -> bool:
        now, before = self.prefix_hit_rate, self.prefix_hit_before
        return (
            now is not None
            and before is not None
            and before >= PREFIX_BASELINE
            and now <= before * PREFIX_DROP
        )

    def _leads(self, band: str) -> tuple[list[str], list[TailShare]]:
        """(``TTFT 71% queue``-style leads of the attributed bands, the bands without an answer)."""
        parts, missing = [], []
        for metric, name in (("ttft", "TTFT"), ("e2e", "e2e")):
            s = self.band(metric, band)
            if s is not None and s.dominant is not None:
                parts.append(f"{name} {dict(s.shares)[s.dominant]:.0%} {s.dominant.replace('_', ' ')}")
            elif s is not None:
                missing.append(s)
        return parts, missing

    def summary(self) -> str:
        """``P95+ TTFT 71% queue, e2e 60% decode; P99+: not enough requests (40 of 100); SM active
        98%; queue +3.5 waiting; 3 preemptions; 2/40 runs retried``."""
        parts, _ = self._leads("p95")
        out = [f"P95+ {', '.join(parts)}" if parts else "tail not attributed"]
        far, missing = self._leads("p99")
        if parts and far:
            out.append(f"P99+ {', '.join(far)}")
        elif parts and missing:
            out.append(f"P99+: not enough requests ({missing[0].requests} of {MIN_REQUESTS_P99})")
        if self.sm_active is not None:
            out.append(f"SM active {self.sm_active:.0%}")
        if self.tensor_active is not None:
            out.append(f"tensor active {self.tensor_active:.0%}")
        if self.queue_growth is not None:
            out.append(f"queue {self.queue_growth:+.1f} waiting")
        if self.preemptions:
            out.append(f"{self.preemptions:g} preemptions")
        if self.eviction_before_reuse is not None:
            out.append(f"{self.eviction_before_reuse:.0%} of evicted KV blocks evicted before reuse")
        if self.prefix_collapsed:
            out.append(f"prefix hits {self.prefix_hit_before:.0%} -> {self.prefix_hit_rate:.0%}")
        if self.retried:
            out.append(f"{self.retried}/{self.runs} runs retried")
        return "; ".join(out)

    def to_json(self) -> dict[str, object]:
        tail = {f"{s.metric}_{s.band}": dict(s.shares) for s in self.tail if s.why_none is None}
        return {
            "window_seconds": self.window,
            "ttft_stage": self.ttft_stage,
            "e2e_stage": self.e2e_stage,
            "tail_shares": tail,
            "runs": self.runs,
            "retried": self.retried,
            "sm_active": self.sm_active,
            "tensor_active": self.tensor_active,
            "queue_growth": self.queue_growth,
            "preemptions": self.preemptions,
            "eviction_before_reuse": self.eviction_before_reuse,
            "prefix_hit_rate": self.prefix_hit_rate,
            "prefix_hit_rate_before": self.prefix_hit_before,
        }


def _hit_rate(intervals: Sequence[Signals]) -> float | None:
    queries = sum(s.total.prefix_cache_queries or 0.0 for s in intervals)
    hits = sum(s.total.prefix_cache_hits or 0.0 for s in intervals)
    return hits / queries if queries > 0 else None


def _eviction(intervals: Sequence[Signals]) -> float | None:
    """Eviction before reuse over the window: weighted by each interval's evicted blocks."""
    pairs = [
        (r.eviction_before_reuse, r.evicted_blocks)
        for s in intervals
        if (r := s.total.kv_residency) is not None and r.eviction_before_reuse is not None
    ]
    blocks = sum(n for _, n in pairs)
    return sum(v * n for v, n in pairs) / blocks if blocks > 0 else None


def queue_growth(waiting: Sequence[tuple[float, float]]) -> float | None:
    """How much the queue grew over a window, from its scrape intervals' ``(end, requests waiting)``:
    the mean waiting of the later half of the intervals (by end) minus that of the earlier half; with
    an odd count the middle interval is in neither. None with fewer than two intervals."""
    ordered = [w for _, w in sorted(waiting)]
    half = len(ordered) // 2
    if half == 0:
        return None
    return sum(ordered[-half:]) / half - sum(ordered[:half]) / half


def _gpu_mean(gpus: Sequence[GpuSignals], name: str) -> float | None:
    values = [v for g in gpus if (v := g.mean(name)) is not None]
    return sum(values) / len(values) if values else None


def gather(
    cls: str,
    end: float,
    window: float,
    samples: Sequence[Sample],
    intervals: Sequence[Signals] = (),
    gpus: Sequence[GpuSignals] = (),
    runs: int = 0,
    retried: int = 0,
    tools: bool = False,
) -> Evidence:
    """The evidence of ``cls`` over (``end - window``, ``end``]: ``samples`` and ``intervals`` (ending
    in the window; intervals ending in the window before it give the prefix-hit baseline) and the
    latest GPU readings ``gpus`` of its endpoints."""
    start = end - window
    inside = [s for s in samples if s.request_class == cls and start < s.at <= end]
    now = [s for s in intervals if start < s.end <= end]
    before = [s for s in intervals if start - window < s.end <= start]
    preempted = [s.total.preemptions for s in now if s.total.preemptions is not None]
    waiting = [(s.end, s.total.waiting) for s in now if s.total.waiting is not None]
    return Evidence(
        request_class=cls,
        end=end,
        window=window,
        tail=attribute_class(cls, inside),
        runs=runs,
        retried=retried,
        tools=tools,
        sm_active=_gpu_mean(gpus, "sm_active"),
        tensor_active=_gpu_mean(gpus, "tensor_active"),
        queue_growth=queue_growth(waiting),
        preemptions=sum(preempted) if preempted else None,
        eviction_before_reuse=_eviction(now),
        prefix_hit_rate=_hit_rate(now),
        prefix_hit_before=_hit_rate(before),
    )
