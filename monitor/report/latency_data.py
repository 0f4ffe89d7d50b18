"""The report's latency values: percentiles per class and measure, and the latency breakdown
(mean seconds per stage, overall and per step), as typed frozen values (:mod:`monitor.report.data`
holds the rest)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

#: Latency SLIs whose percentiles the report shows, and the breakdown parts, in display order.
LATENCY_KINDS: tuple[str, ...] = ("ttft", "itl", "e2e")
#: The breakdown's parts (JSON ``<part>_seconds``), the stages of ``monitor.conventions.STAGES``, in
#: the order the report's table and charts show them.
BREAKDOWN_PARTS: tuple[str, ...] = (
    "queue",
    "prefill",
    "decode",
    "network",
    "tool_turnaround",
    "tokenization",
    "retry",
)


@dataclass(frozen=True)
class LatencyStats:
    """Percentiles (seconds) of one latency measure of one class over the week's probes."""

    request_class: str
    kind: str  # one of LATENCY_KINDS
    count: int
    p50: float | None
    p95: float | None
    p99: float | None


@dataclass(frozen=True)
class Breakdown:
    """Mean seconds per request spent in each part (``None`` where nothing reported the part)."""

    request_class: str
    count: int
    parts: tuple[tuple[str, float | None], ...]  # (part, mean seconds) in BREAKDOWN_PARTS order
    sources: tuple[tuple[str, str | None], ...] = ()  # (part, where its numbers came from)
    population: str = "probe requests"  # whose requests the means are over (breakdown.population)

    def part(self, name: str) -> float | None:
        return dict(self.parts).get(name)

    def source(self, name: str) -> str | None:
        return dict(self.sources).get(name)


@dataclass(frozen=True)
class BreakdownPoint:
    """Mean seconds per part over the requests of one step (``None`` where none reported it)."""

    at: datetime  # end of the step
    count: int
    parts: tuple[tuple[str, float | None], ...]

    def part(self, name: str) -> float | None:
        return dict(self.parts).get(name)


@dataclass(frozen=True)
class BreakdownSeries:
    """The breakdown of one class over the period, one point per step with data."""

    request_class: str
    points: tuple[BreakdownPoint, ...]
