"""``/-/ready``: is the monitor doing its job right now?

Ready when all three hold:

* the scheduler runs (scrapes, probes and evaluation are being scheduled);
* the store takes writes: nothing is spooled (the database answered the last write), or the
  spool holds fewer than ``storage.buffer_max_items`` writes (an outage it can still ride out);
* the last SLO evaluation completed less than two evaluation steps ago.

Not ready is a 503 whose JSON body lists every reason; ``/-/healthy`` only says the process
answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Readiness:
    reasons: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return not self.reasons

    def body(self) -> dict[str, Any]:
        return {"status": "ready"} if self.ready else {"status": "not ready", "reasons": list(self.reasons)}


def readiness(
    *,
    scheduler_running: bool,
    backlog: int,
    max_backlog: int,
    last_evaluation: float | None,
    now: float,
    step: float,
) -> Readiness:
    """The verdict from a snapshot of the service's state (times in the same clock)."""
    reasons = []
    if not scheduler_running:
        reasons.append("the scheduler is not running")
    if backlog >= max_backlog:
        reasons.append(f"the store spool is full: {backlog} writes buffered (limit {max_backlog})")
    if last_evaluation is None:
        reasons.append("no SLO evaluation has completed yet")
    elif now - last_evaluation > 2 * step:
        age = now - last_evaluation
        reasons.append(f"the last SLO evaluation completed {age:.0f}s ago (limit: two steps, {2 * step:g}s)")
    return Readiness(tuple(reasons))
