"""Stage seconds of a population of requests (probes or real traffic), as the rules weigh them.

A share says which stage is largest; a verdict also needs to know how large it is, in seconds,
against the class's objective, and how many requests stand behind it. For one latency (TTFT or
e2e) and each stage this keeps:

* ``band``: the stage's mean seconds over the requests at or above the latency's nearest-rank
  P95 (the P95+ band of :mod:`monitor.bottleneck.tail`);
* ``values``: every request's ``(time, seconds)`` in the stage, so the rules can count the
  requests where the stage alone exceeds a floor, and whether any of them is recent.

Stages are clamped at 0 (a clock artefact never makes a negative stage), and ``frontend`` is what
stands between the client and the engine's queue: the network/proxy part plus vLLM's arrival →
queued part (``tokenization`` in spans, which also holds the first token's trip back to the API
frontend: vLLM stamps the first token there), so it is named for what it holds. ``application``
is what an e2e holds besides every measured stage: an agent's tools and its client's work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from monitor.bottleneck.tail import Sample

#: The stages a latency's requests are weighed by (``frontend`` = network + tokenization).
STAGES: dict[str, tuple[str, ...]] = {
    "ttft": ("retry", "frontend", "queue", "prefill"),
    "e2e": ("retry", "frontend", "queue", "prefill", "decode", "tool_turnaround", "application"),
}
FRONT_PARTS = ("network", "tokenization")
#: What an e2e holds besides the client's and the server's stages: for an agent session, its
#: tools' own time and the client's work between turns (``application``).
EXPLAINED = ("retry", "frontend", "queue", "prefill", "decode", "tool_turnaround")


def _parts(s: Sample) -> dict[str, float]:
    out = {k: max(0.0, v) for k, v in s.parts.items() if not math.isnan(v)}
    front = [out[p] for p in FRONT_PARTS if p in out]
    if front:
        out["frontend"] = sum(front)
    if s.e2e is not None and s.view is not None:
        out["application"] = max(0.0, s.e2e - sum(out.get(p, 0.0) for p in EXPLAINED))
    return out


def _latency(s: Sample, metric: str) -> float | None:
    return s.ttft if metric == "ttft" else s.e2e


@dataclass(frozen=True)
class StageTail:
    """One latency's stages over a population (``source`` names it)."""

    metric: str
    source: str
    requests: int
    p95: float | None  # the latency's nearest-rank P95
    band: dict[str, float] = field(default_factory=dict)  # stage -> mean seconds in the P95+ band
    values: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)

    def above(self, stage: str, floor: float, since: float = -math.inf) -> int:
        """Requests (started after ``since``) whose ``stage`` alone took at least ``floor``."""
        return sum(1 for at, v in self.values.get(stage, ()) if v >= floor and at > since)

    def seconds(self, stage: str) -> float:
        return self.band.get(stage, 0.0)


def stage_tail(samples: Sequence[Sample], metric: str, source: str) -> StageTail:
    """The stages of ``metric`` over the samples that measured it."""
    rows = [(s, v, _parts(s)) for s in samples if (v := _latency(s, metric)) is not None and v > 0]
    if not rows:
        return StageTail(metric, source, 0, None)
    ordered = sorted(v for _, v, _ in rows)
    p95 = ordered[max(1, math.ceil(0.95 * len(ordered))) - 1]
    band = [parts for _, v, parts in rows if v >= p95]
    means = {st: sum(p.get(st, 0.0) for p in band) / len(band) for st in STAGES[metric]}
    values = {st: tuple((s.at, p[st]) for s, _, p in rows if st in p) for st in STAGES[metric]}
    return StageTail(metric, source, len(rows), p95, means, values)
