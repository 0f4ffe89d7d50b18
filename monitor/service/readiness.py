"""``/-/ready``: is the monitor doing its job right now?

Ready when all three hold:

* the scheduler runs (scrapes, probes and evaluation are being scheduled);
* the store takes writes: the database answered the last write (while it does not, writes are
  spooled and the reason names the store), and the spool holds fewer than
  ``storage.buffer_max_items`` writes;
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
    store_away: str | None,
    last_evaluation: float | None,
    now: float,
    step: float,
) -> Readiness:
    """The verdict from a snapshot of the service's state (times in the same clock);
    ``store_away`` is the store's display URL while the last write found it away."""
    reasons = []
    if not scheduler_running:
        reasons.append("the scheduler is not running")
    if store_away is not None:
        reasons.append(f"the store is away: {store_away} ({backlog} writes spooled, written when it answers)")
    if backlog >= max_backlog:
        reasons.append(f"the store spool is full: {backlog} writes buffered (limit {max_backlog})")
    if last_evaluation is None:
        reasons.append("no SLO evaluation has completed yet")
    elif now - last_evaluation > 2 * step:
        age = now - last_evaluation
        reasons.append(f"the last SLO evaluation completed {age:.0f}s ago (limit: two steps, {2 * step:g}s)")
    return Readiness(tuple(reasons))
