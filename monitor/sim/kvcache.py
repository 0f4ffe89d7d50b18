"""The simulated KV-cache pool: fixed-size blocks, prefix caching by chained block hashes, LRU eviction.

Blocks are counted, not stored. A block is either *private* (held by one request, no hash yet),
*cached and in use* (hash known, referenced by >= 1 running request), *cached and evictable*
(hash known, no reference; reused on a hit, evicted LRU-first when space is needed) or free.
Usage, as vLLM reports it, is ``(private + cached in use) / capacity``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monitor.sim.residency import ResidencyTracker


class KVPool:
    """Block accounting of one engine."""

    def __init__(self, num_blocks: int, residency: ResidencyTracker | None = None) -> None:
        self.residency = residency  # --kv-cache-metrics: sampled block lifetimes, idle times, reuse gaps
        self.num_blocks = num_blocks
        self.capacity = num_blocks
        self.private = 0
        self.in_use: dict[bytes, int] = {}
        self.evictable: OrderedDict[bytes, None] = OrderedDict()

    @property
    def used(self) -> int:
        return self.private + len(self.in_use)

    def usage(self) -> float:
        """Fraction of the pool held by running requests (0..1)."""
        return min(1.0, self.used / self.capacity) if self.capacity else 1.0

    def set_capacity(self, blocks: int | None) -> None:
        """Shrink (or restore with ``None``) the usable pool; evictable blocks beyond it are dropped."""
        self.capacity = min(self.num_blocks, blocks) if blocks else self.num_blocks
        self._evict(0)

    def free_blocks(self) -> int:
        """Blocks a new allocation can take (free plus evictable)."""
        return max(0, self.capacity - self.used)

    def match_prefix(self, hashes: Sequence[bytes]) -> int:
        """Number of leading ``hashes`` present in the cache (in use or evictable)."""
        n = 0
        for h in hashes:
            if h not in self.in_use and h not in self.evictable:
                break
            n += 1
        return n

    def acquire(self, hashes: Sequence[bytes], private: int) -> bool:
        """Reference the cached ``hashes`` and allocate ``private`` new blocks; False if it cannot fit."""
        reuse_evictable = sum(1 for h in hashes if h in self.evictable)
        if self.capacity - self.used - reuse_evictable < private:
            return False
        for h in hashes:
            if h in self.evictable:
                del self.evictable[h]
            self.in_use[h] = self.in_use.get(h, 0) + 1
            if self.residency is not None:
                self.residency.accessed(h)  # a prefix-cache hit touches the block
        self.private += private
        self._evict(0)
        return True

    def grow(self, blocks: int) -> bool:
        """Allocate ``blocks`` more private blocks for a running request; False if the pool is full."""
        if self.free_blocks() < blocks:
            return False
        self.private += blocks
        self._evict(0)
        return True

    def publish(self, hashes: Sequence[bytes]) -> None:
        """Turn one private block per hash into a cached block (after its prefill was computed)."""
        for h in hashes:
            self.private -= 1
            if self.residency is not None and h not in self.in_use and h not in self.evictable:
                self.residency.allocated(h)
            self.in_use[h] = self.in_use.get(h, 0) + 1

    def release(self, hashes: Sequence[bytes], private: int) -> None:
        """Drop a request's references; cached blocks stay reusable until evicted."""
        self.private -= private
        for h in hashes:
            left = self.in_use.get(h, 0) - 1
            if left > 0:
                self.in_use[h] = left
            else:
                self.in_use.pop(h, None)
                self.evictable[h] = None
                self.evictable.move_to_end(h)
        self._evict(0)

    def clear_cache(self) -> None:
        """Forget every evictable block (engine restart)."""
        self.evictable.clear()
        if self.residency is not None:
            self.residency.clear()

    def _evict(self, need: int) -> None:
        while self.evictable and self.used + len(self.evictable) + need > self.capacity:
            h, _ = self.evictable.popitem(last=False)
            if self.residency is not None:
                self.residency.evicted(h)
