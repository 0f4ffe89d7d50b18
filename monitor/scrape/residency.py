"""KV-cache residency from vLLM's ``vllm:kv_block_*`` histograms, and the cache-thrash signal.

vLLM (0.12+, ``--kv-cache-metrics``) samples a share of KV blocks (``--kv-cache-metrics-sample``,
default 0.01) and, when a sampled block is evicted, observes once its lifetime (allocation to
eviction) and its idle time (last access to eviction), and each gap between its last accesses
(a ring of 4 accesses: 0 to 3 gaps). All three histograms share the bucket edges 1 ms … 1800 s.

**Eviction before reuse** (docs/collector.md "KV residency") is the share of the interval's
evicted blocks whose idle time before eviction is at most the *typical reuse gap*, the median of
the interval's reuse gaps: ``T = histogram_quantile(0.5, reuse_gap)`` (Prometheus' interpolation)
and ``share = idle_before_evict.fraction_under(T)`` (linear inside the bucket holding ``T``). A block
evicted sooner after its last use than blocks are typically reused was likely evicted just before
its next hit: a share near 1 is cache thrash (the pool is too small for the working set), near 0
means blocks leave long after their reuse window. No value without evictions or without reuse gaps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.scrape.signals import Histogram

#: Canonical histogram names of the residency families (keys of ``EngineSignals.histograms``).
RESIDENCY_HISTOGRAMS = ("kv_block_lifetime", "kv_block_idle_before_evict", "kv_block_reuse_gap")


@dataclass(frozen=True)
class KVResidency:
    """What the residency histograms say over one interval (or since start)."""

    evicted_blocks: float  # sampled blocks evicted (observations of idle_before_evict)
    reuse_gaps: float  # reuse gaps observed
    lifetime_p50: float | None
    idle_before_evict_p50: float | None
    reuse_gap_p50: float | None  # T, the typical reuse gap
    eviction_before_reuse: float | None  # share of evicted blocks idle <= T
    exact: bool  # T is a bucket edge, so the share needs no interpolation

    def to_dict(self) -> dict[str, Any]:
        return {
            "evicted_blocks": self.evicted_blocks,
            "reuse_gaps": self.reuse_gaps,
            "lifetime_p50": self.lifetime_p50,
            "idle_before_evict_p50": self.idle_before_evict_p50,
            "reuse_gap_p50": self.reuse_gap_p50,
            "eviction_before_reuse": self.eviction_before_reuse,
            "exact": self.exact,
        }


def kv_residency(histograms: dict[str, Histogram]) -> KVResidency | None:
    """The residency signals, or None when the page has none of the ``kv_block_*`` families."""
    if not any(name in histograms for name in RESIDENCY_HISTOGRAMS):
        return None
    lifetime = histograms.get("kv_block_lifetime")
    idle = histograms.get("kv_block_idle_before_evict")
    gaps = histograms.get("kv_block_reuse_gap")
    typical = gaps.quantile(0.5) if gaps is not None else None
    share, exact = None, False
    if idle is not None and typical is not None and idle.count > 0:
        share, exact = idle.fraction_under(typical)
    return KVResidency(
        evicted_blocks=idle.count if idle is not None else 0.0,
        reuse_gaps=gaps.count if gaps is not None else 0.0,
        lifetime_p50=lifetime.quantile(0.5) if lifetime is not None else None,
        idle_before_evict_p50=idle.quantile(0.5) if idle is not None else None,
        reuse_gap_p50=typical,
        eviction_before_reuse=share,
        exact=exact,
    )
