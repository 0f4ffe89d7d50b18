"""The cause's shape and the floors every cause is held to (docs/bottleneck.md "Floors").

A stage is a cause only when it is **large**: at least the class's floor — :data:`FLOOR_SHARE` of
the class's tightest objective for that latency (TTFT or e2e), at least :data:`MIN_FLOOR` — and
when **enough requests stand behind it**: at least :data:`BEHIND` of the window's requests (and
:data:`BEHIND_SHARE` of them) took the floor in that stage alone, one of them in the recent
window (so a cause clears within the recent window of going away). A 150 ms proxy delay under a
2.5 s TTFT objective is no cause; two slow probes of forty are not a pattern. Without an
objective, the floor is :data:`NO_OBJECTIVE_FLOOR` or a quarter of the tail's P95, whichever is
larger, and prefill and decode (the model's own work) are never named: nothing says they are too
slow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from monitor.bottleneck.evidence import Evidence
from monitor.bottleneck.stages import StageTail

FLOOR_SHARE = 0.25
MIN_FLOOR = 0.05
NO_OBJECTIVE_FLOOR = 0.25
BEHIND = 3
BEHIND_SHARE = 0.05


@dataclass(frozen=True)
class Cause:
    verdict: str
    stage: str | None
    seconds: float  # what the cause costs a tail request (its stage's seconds), 0 when unknown
    source: str
    why: str

    def to_json(self) -> dict[str, object]:
        return {"verdict": self.verdict, "stage": self.stage, "seconds": self.seconds,
                "source": self.source, "why": self.why}  # fmt: skip


def floor(e: Evidence, metric: str) -> float:
    objective = e.objectives.ttft if metric == "ttft" else e.objectives.e2e
    if objective is not None:
        return max(MIN_FLOOR, FLOOR_SHARE * objective)
    tails = (e.probe_ttft, e.traffic_ttft) if metric == "ttft" else (e.probe_e2e, e.traffic_e2e)
    p95 = max((t.p95 for t in tails if t.p95 is not None and e.enough(t)), default=0.0)
    return max(NO_OBJECTIVE_FLOOR, FLOOR_SHARE * p95)


def client(e: Evidence, tail: StageTail, stage: str, limit: float) -> Cause | None:
    """``stage`` of one request population, when large and backed (module docstring)."""
    if tail.requests < BEHIND:
        return None
    behind = tail.above(stage, limit)
    needed = max(BEHIND, math.ceil(BEHIND_SHARE * tail.requests))
    if behind < needed or tail.above(stage, limit, since=e.recent_start) < 1:
        return None
    ordered = sorted(v for _, v in tail.values.get(stage, ()))
    p95 = ordered[max(1, math.ceil(0.95 * len(ordered))) - 1] if ordered else 0.0
    seconds = max(tail.seconds(stage), min(p95, tail.p95 or p95))
    name = stage.replace("_", " ")
    why = f"{name} {seconds:.2f} s in the tail, {behind} of {tail.requests} {tail.source} >= {limit:.2f} s"
    return Cause("", stage, seconds, tail.source, why)


def best(e: Evidence, stage: str, metric: str, least: float = 0.0) -> Cause | None:
    limit = max(floor(e, metric), least)
    tails = (e.probe_ttft, e.traffic_ttft) if metric == "ttft" else (e.probe_e2e, e.traffic_e2e)
    found = [c for t in tails if (c := client(e, t, stage, limit)) is not None]
    return max(found, key=lambda c: c.seconds, default=None)


def named(c: Cause | None, verdict: str, why: str = "") -> Cause | None:
    if c is None:
        return None
    return Cause(verdict, c.stage, c.seconds, c.source, f"{c.why}{'; ' + why if why else ''}")
