"""Does a replay run hold a class's SLOs? One clause per SLO, judged on the run's requests.

The events are those of docs/slo-events.md applied to the run: availability — every request,
bad when unanswered (a transport failure); latency — every answered request (ITL: every token
sample), bad above the threshold, plus one bad event per unanswered request: a run is evidence of
capacity, and a latency clause judged on the survivors of a run whose requests mostly failed
would hold at a load the deployment does not serve (whether or not the class has an availability
SLO). A clause holds when good / total ≥ objective. Correctness
SLOs are not judged by a replay (forced-length answers have no right answer): ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from monitor.conventions import AVAILABILITY_FAILURES
from monitor.model import SLO
from monitor.replay.requests import Outcome

#: Latency SLIs a replay's requests give events for (cold/warm TTFT are the long-prompt probe's).
REPLAY_LATENCY_SLIS = ("ttft", "itl", "tpot", "e2e", "queue_time", "stall")


@dataclass(frozen=True)
class Clause:
    """One SLO judged on one run."""

    slo: str
    sli: str
    objective: float
    threshold: float | None
    good: int
    total: int

    @property
    def attained(self) -> float | None:
        return self.good / self.total if self.total else None

    @property
    def holds(self) -> bool | None:
        return None if self.attained is None else self.attained >= self.objective

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "attained": self.attained, "holds": self.holds}


def _answered(o: Outcome) -> bool:
    return o.reason not in AVAILABILITY_FAILURES


def _latency_samples(outcomes: Sequence[Outcome], sli: str) -> list[float]:
    return [s for o in outcomes if _answered(o) for s in o.timings.sli_samples(sli)]


def judge(outcomes: Sequence[Outcome], slos: Sequence[SLO]) -> list[Clause]:
    """One clause per availability and latency SLO of the class."""
    out: list[Clause] = []
    for slo in slos:
        if slo.sli == "availability":
            good, total = sum(1 for o in outcomes if _answered(o)), len(outcomes)
        elif slo.sli in REPLAY_LATENCY_SLIS and slo.threshold is not None:
            samples = _latency_samples(outcomes, slo.sli)
            unanswered = sum(1 for o in outcomes if not _answered(o))
            good, total = sum(1 for s in samples if s <= slo.threshold), len(samples) + unanswered
        else:
            continue
        out.append(Clause(slo.name, slo.sli, slo.objective, slo.threshold, good, total))
    return out


def all_hold(clauses: Sequence[Clause]) -> bool | None:
    """True when every judged clause holds; None when none could be judged."""
    verdicts = [c.holds for c in clauses if c.holds is not None]
    return all(verdicts) if verdicts else None
