"""Which replica owns which endpoint: Prometheus' ``hashmod``, over the endpoint name.

An endpoint belongs to shard ``hashmod(name, N)``: the MD5 digest of the endpoint's configured
name, its last eight bytes read as a big-endian unsigned 64-bit integer, modulo N. That is exactly
what Prometheus' ``hashmod`` relabel action computes (``sum64(md5(value)) % modulus``), so a
sharded Prometheus scraping ``endpoint`` labels keeps the same endpoints as the monitor shard
with the same number (tests/fleet check it against a real Prometheus). The assignment is static:
it depends on the name and N only, never on which replicas are alive (a dead shard is not
rebalanced; docs/fleet.md says what that costs).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from monitor.errors import UsageError
from monitor.model import Model

_SHARD = re.compile(r"^(\d+)/(\d+)$")


def hashmod(value: str, modulus: int) -> int:
    """Prometheus' ``hashmod``: the low 64 bits of MD5(value), big-endian, modulo ``modulus``."""
    digest = hashlib.md5(value.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[8:], "big") % modulus


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (``0 <= index < count``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise UsageError(f"--shard: expected K/N with 0 <= K < N, got {self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHARD.match(text.strip())
        if match is None:
            raise UsageError(f"--shard: expected K/N (e.g. 0/2), got {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def owns(self, endpoint: str) -> bool:
        return hashmod(endpoint, self.count) == self.index

    def restrict(self, model: Model) -> Model:
        """``model`` with only this shard's endpoints (every class and SLO kept: evaluation is fleet-wide)."""
        return dataclasses.replace(model, endpoints=tuple(e for e in model.endpoints if self.owns(e.name)))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def assignment(names: Iterable[str], shards: int) -> dict[int, list[str]]:
    """Endpoint names by owning shard (every shard present, possibly empty)."""
    out: dict[int, list[str]] = {k: [] for k in range(shards)}
    for name in names:
        out[hashmod(name, shards)].append(name)
    return out


def balance(plan: dict[int, list[str]]) -> float:
    """Largest shard over the mean shard size (1.0 is perfect; 0 endpoints gives 1.0)."""
    sizes = [len(v) for v in plan.values()]
    mean = sum(sizes) / len(sizes)
    return max(sizes) / mean if mean else 1.0
