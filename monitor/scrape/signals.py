"""Canonical server-side signals: what one scrape (cumulative) or two scrapes (an interval) say.

This is the contract between the collector and everything downstream. Whatever generation of
metric names a server speaks (vLLM V0, V1, renamed families, SGLang), the collector maps it onto
these fields. Histograms keep their bucket edges as read from the page (never assumed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from monitor.scrape.residency import KVResidency, kv_residency

#: Canonical histogram names (keys of ``EngineSignals.histograms``).
LATENCY_HISTOGRAMS = ("ttft", "itl", "tpot", "e2e", "queue", "prefill", "decode", "inference")
TOKEN_HISTOGRAMS = ("prompt_tokens", "generation_tokens")


@dataclass(frozen=True)
class Histogram:
    """A cumulative histogram: ``counts[i]`` observations were ``<= edges[i]``; last edge is +Inf."""

    edges: tuple[float, ...]
    counts: tuple[float, ...]
    sum: float
    count: float

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None

    def quantile(self, q: float) -> float | None:
        """``histogram_quantile(q, ...)`` with Prometheus semantics; None when there are no observations."""
        if self.count <= 0 or len(self.edges) < 2 or math.isnan(q):
            return None
        if q < 0:
            return -math.inf
        if q > 1:
            return math.inf
        total = self.counts[-1]
        if total <= 0:
            return None
        rank = q * total
        idx = next(i for i, c in enumerate(self.counts) if c >= rank)
        if math.isinf(self.edges[idx]):
            return self.edges[-2]
        if idx == 0 and self.edges[0] <= 0:
            return self.edges[0]
        start = 0.0 if idx == 0 else self.edges[idx - 1]
        below = 0.0 if idx == 0 else self.counts[idx - 1]
        in_bucket = self.counts[idx] - below
        if in_bucket <= 0:
            return self.edges[idx]
        return start + (self.edges[idx] - start) * (rank - below) / in_bucket

    def good_events(self, threshold: float) -> tuple[float, float, bool]:
        """(observations <= threshold, all observations, exact?).

        Exact when ``threshold`` is one of the page's bucket edges; otherwise the count is linearly
        interpolated inside the bucket that holds the threshold, and ``exact`` is False.
        """
        total = self.count
        for i, edge in enumerate(self.edges):
            if math.isclose(edge, threshold, rel_tol=1e-9, abs_tol=1e-12):
                return self.counts[i], total, True
            if edge > threshold:
                start = 0.0 if i == 0 else self.edges[i - 1]
                below = 0.0 if i == 0 else self.counts[i - 1]
                if math.isinf(edge):
                    return below, total, False
                frac = (threshold - start) / (edge - start) if edge > start else 1.0
                return below + (self.counts[i] - below) * frac, total, False
        return total, total, True

    def fraction_under(self, threshold: float) -> tuple[float | None, bool]:
        """Share of observations <= threshold (None with no observations) and whether it is exact."""
        good, total, exact = self.good_events(threshold)
        return (good / total if total > 0 else None), exact

    def minus(self, older: Histogram) -> Histogram:
        """Observations made since ``older`` (same edges; callers handle resets)."""
        return Histogram(
            self.edges,
            tuple(max(0.0, a - b) for a, b in zip(self.counts, older.counts, strict=True)),
            max(0.0, self.sum - older.sum),
            max(0.0, self.count - older.count),
        )

    def plus(self, other: Histogram) -> Histogram:
        """Both histograms' observations together (same edges)."""
        return Histogram(
            self.edges,
            tuple(a + b for a, b in zip(self.counts, other.counts, strict=True)),
            self.sum + other.sum,
            self.count + other.count,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "edges": [("+Inf" if math.isinf(e) else e) for e in self.edges],
            "counts": list(self.counts),
            "sum": self.sum,
            "count": self.count,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Histogram:
        edges = tuple(math.inf if e == "+Inf" else float(e) for e in d["edges"])
        return cls(edges, tuple(float(c) for c in d["counts"]), float(d["sum"]), float(d["count"]))


def histogram_summary(h: Histogram, thresholds: tuple[float, ...] = ()) -> dict[str, Any]:
    """count, mean, p50/p95/p99 and the share under each threshold (with ``exact``)."""
    under = {}
    for t in thresholds:
        frac, exact = h.fraction_under(t)
        under[f"{t:g}"] = {"fraction": frac, "exact": exact}
    return {
        "count": h.count,
        "sum": h.sum,
        "mean": h.mean,
        "p50": h.quantile(0.5),
        "p95": h.quantile(0.95),
        "p99": h.quantile(0.99),
        "under": under,
    }


@dataclass(frozen=True)
class EngineSignals:
    """Signals of one engine (data-parallel rank), or summed over engines.

    Counter-like fields are increases over the interval (or totals since start for a cumulative
    reading); gauge-like fields are the value at the end of the interval.
    """

    finished: dict[str, float] = field(default_factory=dict)  # by finished_reason
    histograms: dict[str, Histogram] = field(default_factory=dict)
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    preemptions: float | None = None
    admission_rejections: float | None = None  # refused by the frontend's queue limits (vLLM 0.33+)
    #: the API server's answers on its inference routes by status (vLLM: "2xx"/"4xx"/"5xx";
    #: SGLang: exact codes such as "429"); empty when the page has no HTTP counter
    http_status: dict[str, float] = field(default_factory=dict)
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    spec_drafts: float | None = None
    spec_draft_tokens: float | None = None
    spec_accepted_tokens: float | None = None
    spec_accepted_per_position: dict[str, float] = field(default_factory=dict)
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = None  # fraction 0..1
    # Values the server computes itself (gauges), used only where the counters above are missing:
    # vLLM V0 ``gpu_prefix_cache_hit_rate``/``spec_decode_draft_acceptance_rate``, SGLang
    # ``cache_hit_rate``/``spec_accept_rate``/``spec_accept_length``.
    reported_prefix_cache_hit_rate: float | None = None
    reported_spec_accept_rate: float | None = None
    reported_spec_accept_length: float | None = None

    @property
    def requests(self) -> float:
        return sum(self.finished.values())

    @property
    def kv_residency(self) -> KVResidency | None:
        """KV-block residency and eviction before reuse (None without ``kv_block_*`` families)."""
        return kv_residency(self.histograms)

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        if self.prefix_cache_queries and self.prefix_cache_hits is not None:
            return self.prefix_cache_hits / self.prefix_cache_queries
        return self.reported_prefix_cache_hit_rate

    @property
    def spec_acceptance_rate(self) -> float | None:
        if self.spec_draft_tokens and self.spec_accepted_tokens is not None:
            return self.spec_accepted_tokens / self.spec_draft_tokens
        return self.reported_spec_accept_rate

    @property
    def spec_mean_accepted_length(self) -> float | None:
        """1 + accepted / drafts: tokens produced per verification step."""
        if self.spec_drafts and self.spec_accepted_tokens is not None:
            return 1.0 + self.spec_accepted_tokens / self.spec_drafts
        return self.reported_spec_accept_length

    def to_dict(self, thresholds: tuple[float, ...] = ()) -> dict[str, Any]:
        """Stable JSON form (keys documented in docs/collector.md)."""
        return {
            "requests": self.requests,
            "finished": dict(sorted(self.finished.items())),
            "prompt_tokens": self.prompt_tokens,
            "generation_tokens": self.generation_tokens,
            "preemptions": self.preemptions,
            "admission_rejections": self.admission_rejections,
            "http_status": dict(self.http_status),
            "running": self.running,
            "waiting": self.waiting,
            "kv_cache_usage": self.kv_cache_usage,
            "prefix_cache": {
                "queries": self.prefix_cache_queries,
                "hits": self.prefix_cache_hits,
                "hit_rate": self.prefix_cache_hit_rate,
            },
            "spec_decode": {
                "drafts": self.spec_drafts,
                "draft_tokens": self.spec_draft_tokens,
                "accepted_tokens": self.spec_accepted_tokens,
                "accepted_per_position": dict(sorted(self.spec_accepted_per_position.items())),
                "acceptance_rate": self.spec_acceptance_rate,
                "mean_accepted_length": self.spec_mean_accepted_length,
            },
            "histograms": {
                k: histogram_summary(h, thresholds if k in LATENCY_HISTOGRAMS else ())
                for k, h in sorted(self.histograms.items())
            },
            "kv_residency": residency.to_dict() if (residency := self.kv_residency) else None,
        }


@dataclass(frozen=True)
class Signals:
    """What the collector derived for one endpoint: an interval (two scrapes) or one cumulative page."""

    endpoint: str
    backend: str  # "vllm" or "sglang"
    generation: str  # name generation detected, e.g. "vllm-v1-engine", "vllm-v0", "sglang"
    model: str | None
    end: float  # wall-clock Unix time of the newer scrape
    start: float | None  # wall-clock time of the older scrape; None for a cumulative reading
    reset: bool  # a counter reset (server restart) happened inside the interval
    engines: dict[str, EngineSignals]
    total: EngineSignals  # summed over engines
    notes: tuple[str, ...] = ()  # e.g. "threshold 0.3 is not a bucket edge of ttft"

    @property
    def duration(self) -> float | None:
        return self.end - self.start if self.start is not None else None

    def rate(self, value: float | None) -> float | None:
        d = self.duration
        return value / d if value is not None and d is not None and d > 0 else None

    @property
    def request_rate(self) -> float | None:
        return self.rate(self.total.requests)

    @property
    def prompt_tokens_per_second(self) -> float | None:
        return self.rate(self.total.prompt_tokens)

    @property
    def generation_tokens_per_second(self) -> float | None:
        return self.rate(self.total.generation_tokens)

    @property
    def preemptions_per_second(self) -> float | None:
        return self.rate(self.total.preemptions)

    def breakdown(self) -> dict[str, float] | None:
        """Share of mean e2e spent in queue, prefill and decode (None without requests).

        Each part is mean(part) / mean(e2e) over the same interval; ``other`` is what the three
        do not explain (tokenization, detokenization, preemption gaps), never negative. Parts a
        server does not expose (SGLang has no decode histogram) are left out.
        """
        h = self.total.histograms
        e2e = h["e2e"].mean if "e2e" in h else None
        if not e2e:
            return None
        parts = {k: (h[k].mean or 0.0) / e2e for k in ("queue", "prefill", "decode") if k in h}
        parts["other"] = max(0.0, 1.0 - sum(parts.values()))
        return parts

    def to_dict(self, thresholds: tuple[float, ...] = ()) -> dict[str, Any]:
        """Stable JSON form of everything derived (keys documented in docs/collector.md)."""
        return {
            "endpoint": self.endpoint,
            "backend": self.backend,
            "generation": self.generation,
            "model": self.model,
            "start": self.start,
            "end": self.end,
            "duration": self.duration,
            "reset": self.reset,
            "rates": {
                "requests_per_second": self.request_rate,
                "prompt_tokens_per_second": self.prompt_tokens_per_second,
                "generation_tokens_per_second": self.generation_tokens_per_second,
                "preemptions_per_second": self.preemptions_per_second,
            },
            "breakdown": self.breakdown(),
            "total": self.total.to_dict(thresholds),
            "engines": {k: e.to_dict(thresholds) for k, e in sorted(self.engines.items())},
            "notes": list(self.notes),
        }
