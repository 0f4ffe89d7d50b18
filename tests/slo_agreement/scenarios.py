"""Every agreement scenario: probe-sourced, server-sourced, detection-time targets, maintenance windows.

The detection scenarios are docs/slo-events.md §3's table: a 99.9 % / 30-day server availability
SLO at 1000 requests a minute (every guard is met within a minute), a clean stretch, then an
outage with a constant error ratio from ``onset``. The 100/50/10 % cases start after 3 clean
hours: the 1h window is full of good events (the table's worst case) and the 6h window holds
enough of them that the 1h/5m row, as the table says, is the first to page. The 1 % case starts
after 6 clean hours: its 6h window is full, the worst case of the 6h/30m row that pages it.
The 0.5 % case's worst case needs a full clean day (1d window) or three (3d window), beyond the
suite's time budget: it starts after a clean hour, so the 3d/6h ticket row fires within minutes
(still within the 15 h target), and it checks that no page row ever holds at 0.5 % (5× the
budget, below the page factors 6 and 14.4).
"""

from __future__ import annotations

from tests.slo_agreement.results import BURN_PAGE, BURN_TICKET
from tests.slo_agreement.scenarios_llm import LLM_SCENARIOS
from tests.slo_agreement.scenarios_maintenance import MAINTENANCE_SCENARIOS
from tests.slo_agreement.scenarios_probes import PROBE_SCENARIOS
from tests.slo_agreement.scenarios_server import SERVER_SCENARIOS
from tests.slo_agreement.streams import Detection, Scenario, SLODef, requests, traffic

PER_MINUTE = 1000


def _detection(name: str, bad_per_mille: int, clean: int, detection: Detection, minutes: int) -> Scenario:
    def finished(m: int) -> dict[str, int]:
        bad = bad_per_mille if m > clean else 0
        return requests(PER_MINUTE - bad, error=bad)

    about = f"{bad_per_mille / 10:g} % errors after {clean} clean minutes; {detection.alert} within {detection.within} min"
    slo = SLODef("availability", "server", "99.9")
    return Scenario(name, about, slo, minutes, server=traffic("a", range(1, minutes + 1), finished),
                    detection=detection, finding="§3 detection-time target")  # fmt: skip


DETECTION_SCENARIOS = (
    _detection("detect-100pct", 1000, 180, Detection(BURN_PAGE, 180, 2), 195),
    _detection("detect-50pct", 500, 180, Detection(BURN_PAGE, 180, 5), 195),
    _detection("detect-10pct", 100, 180, Detection(BURN_PAGE, 180, 15), 205),
    _detection("detect-1pct", 10, 360, Detection(BURN_PAGE, 360, 240), 600),
    _detection("detect-half-pct", 5, 60, Detection(BURN_TICKET, 60, 900, never=(BURN_PAGE,)), 180),
)

SCENARIOS: tuple[Scenario, ...] = (*PROBE_SCENARIOS, *LLM_SCENARIOS, *SERVER_SCENARIOS, *DETECTION_SCENARIOS,
                                   *MAINTENANCE_SCENARIOS)  # fmt: skip
BY_NAME = {s.name: s for s in SCENARIOS}
assert len(BY_NAME) == len(SCENARIOS), "scenario names must be unique"
