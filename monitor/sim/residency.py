"""KV-block residency as vLLM measures it with ``--kv-cache-metrics`` (``m3mon sim --kv-cache-metrics``).

vLLM's ``KVCacheMetricsCollector`` (``vllm/v1/core/kv_cache_metrics.py``) samples a share of blocks
when they are allocated (``--kv-cache-metrics-sample``, default 0.01), records each later access
(a prefix-cache hit) in a ring of the last 4 access times, and at eviction reports the block's
lifetime (allocation to eviction), its idle time (last access, or allocation, to eviction) and the
gaps between its recorded accesses; the Prometheus logger observes them into
``vllm:kv_block_lifetime_seconds``, ``vllm:kv_block_idle_before_evict_seconds`` and
``vllm:kv_block_reuse_gap_seconds`` (buckets ``kv_cache_residency_buckets``). The simulated pool
counts blocks by prefix hash, so a block is "allocated" when its hash is first cached.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from prometheus_client import CollectorRegistry, Histogram

#: ``kv_cache_residency_buckets`` of vLLM's PrometheusStatLogger (0.12+).
RESIDENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60,
                     120, 300, 600, 1200, 1800)  # fmt: skip
_SAMPLED = "Sampled metrics (controlled by --kv-cache-metrics-sample)."
FAMILIES = (
    ("vllm:kv_block_lifetime_seconds",
     f"Histogram of KV cache block lifetime from allocation to eviction. {_SAMPLED}"),
    ("vllm:kv_block_idle_before_evict_seconds",
     f"Histogram of idle time before KV cache block eviction. {_SAMPLED}"),
    ("vllm:kv_block_reuse_gap_seconds", "Histogram of time gaps between consecutive KV cache block accesses. "
     f"Only the most recent accesses are recorded (ring buffer). {_SAMPLED}"),
)  # fmt: skip
HISTORY = 4  # vLLM's access_history deque(maxlen=4)


class ResidencyHistograms:
    """The three families, registered on the simulator's registry."""

    def __init__(self, r: CollectorRegistry, labels: list[str], values: tuple[str, str]) -> None:
        self.lifetime, self.idle, self.reuse_gap = (
            Histogram(name, doc, labels, buckets=RESIDENCY_BUCKETS, registry=r).labels(*values)
            for name, doc in FAMILIES
        )

    def observe(self, lifetime: float, idle: float, gaps: list[float]) -> None:
        self.lifetime.observe(lifetime)
        self.idle.observe(idle)
        for gap in gaps:
            self.reuse_gap.observe(gap)


@dataclass
class _Block:
    born: float
    last: float
    accesses: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))


class ResidencyTracker:
    """Sampled blocks of one pool, keyed by prefix hash; observations go to ``sink()``."""

    def __init__(self, sample: float, seed: int, sink: Callable[[], ResidencyHistograms | None],
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.sample = min(1.0, max(0.0, sample))
        self.rng = random.Random(seed)
        self.sink = sink
        self.clock = clock
        self.blocks: dict[bytes, _Block] = {}

    def allocated(self, h: bytes) -> None:
        if h not in self.blocks and self.rng.random() < self.sample:
            now = self.clock()
            self.blocks[h] = _Block(now, now)

    def accessed(self, h: bytes) -> None:
        block = self.blocks.get(h)
        if block is not None:
            block.last = self.clock()
            block.accesses.append(block.last)

    def evicted(self, h: bytes) -> None:
        block = self.blocks.pop(h, None)
        histograms = self.sink()
        if block is None or histograms is None:
            return
        now, times = self.clock(), list(block.accesses)
        gaps = [b - a for a, b in pairwise(times)]
        histograms.observe(now - block.born, now - block.last, gaps)

    def clear(self) -> None:
        self.blocks.clear()
