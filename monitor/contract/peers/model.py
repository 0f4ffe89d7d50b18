"""What a peer benchmark file says about one run, in m3mon's units (seconds, requests, tokens).

A file gives **per-request values** (``vllm bench serve --save-detailed``, GuideLLM's request
lists when none was sampled away) or only **quantiles** (``vllm bench serve`` without
``--save-detailed``, AIPerf's ``profile_export_aiperf.json``). Quantiles keep the tool's own
definition of a percentile (:data:`LINEAR` or :data:`NEAREST`) and the number of values they
were taken over, so a clause can be bounded from them (:mod:`monitor.contract.peers.judge`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: ``numpy.percentile``'s default: position ``(n - 1) * p`` between the two nearest order statistics.
LINEAR = "linear"
#: Inverse of the empirical CDF: the first value whose cumulative share reaches ``p`` (nearest rank).
NEAREST = "nearest"


@dataclass(frozen=True)
class Quantiles:
    """A metric's quantiles as a tool reported them (seconds)."""

    count: int | None  # values they were taken over; None when the file does not say
    method: str  # LINEAR or NEAREST
    points: dict[float, float]  # percentile (0..100) -> value
    mean: float | None = None
    minimum: float | None = None
    maximum: float | None = None

    def ranks(self, p: float) -> tuple[int, int]:
        """The 0-based order statistics the ``p`` percentile lies between (widened by one where
        floating point could put it on either side of a whole rank)."""
        n = self.count or 0
        if self.method == LINEAR:
            h = (n - 1) * p / 100.0
            lo, hi = math.floor(h - 1e-9), math.ceil(h + 1e-9)
        else:
            k = n * p / 100.0
            lo, hi = math.ceil(k - 1e-9) - 1, math.ceil(k + 1e-9) - 1
        return max(0, min(lo, n - 1)), max(0, min(hi, n - 1))


@dataclass(frozen=True)
class PeerRun:
    """One benchmark run read from a peer tool's file."""

    tool: str  # "vllm bench serve", "GuideLLM", "AIPerf"
    version: str | None
    started_at: float  # Unix seconds
    duration: float
    load_kind: str  # "rate", "concurrency" or "burst" (every request at once)
    load_value: float | None
    completed: int
    failed: int
    request_throughput: float
    output_throughput: float | None
    total_token_throughput: float | None
    prompt_tokens: float | None  # mean per completed request
    output_tokens: float | None
    incomplete: int = 0  # cancelled by the tool when its run ended (neither good nor bad)
    samples: dict[str, list[float]] = field(default_factory=dict)  # SLI -> events (seconds)
    quantiles: dict[str, Quantiles] = field(default_factory=dict)  # metric -> as reported
    model: str | None = None
    target: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def basis(self) -> str:
        return "per-request values" if self.samples else "quantiles only"


class FormatError(ValueError):
    """The file is not what its format promises (a field missing or of the wrong type)."""


def number(doc: dict[str, object], key: str, *, optional: bool = False) -> float | None:
    """``doc[key]`` as a finite float; FormatError naming the key otherwise (None if optional and absent)."""
    value = doc.get(key)
    if value is None and optional:
        return None
    if value is None:
        raise FormatError(f"field {key!r} is missing")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FormatError(f"field {key!r} is {value!r}, expected a number")
    return float(value)


def value(item: object, what: str) -> float:
    """One per-request value as a float; FormatError naming ``what`` when it is not a number (its
    range is checked with the rest of the run, :mod:`monitor.contract.peers.validate`)."""
    if isinstance(item, bool) or not isinstance(item, int | float):
        raise FormatError(f"{what} is {item!r}, expected a number")
    return float(item)


def count(doc: dict[str, object], key: str) -> int:
    value = number(doc, key)
    assert value is not None
    if value < 0 or value != int(value):
        raise FormatError(f"field {key!r} is {value!r}, expected a whole number >= 0")
    return int(value)


def mapping(doc: object, key: str) -> dict[str, object]:
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, dict):
        raise FormatError(f"field {key!r} is missing or not an object")
    return value
