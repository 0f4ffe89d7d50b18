"""Print every scenario's numbers from the three evaluators as two Markdown tables.

    .venv/bin/python -m tests.slo_agreement.table [SCENARIO ...]

Table 1: per scenario, at one check minute (the first at or after the oracle's first alert, else
the last minute), the error ratio of some windows and the budget remaining, each cell
``oracle / prometheus / store``. Table 2: the minute each SLO alert first fires, per source (—:
never; the store states no absent-metric or bucket-edge alert), and the minutes at which a
source's alert state differs from the oracle's *without* the ±1-minute tolerance. Needs promtool
(on PATH or /usr/bin).
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from pathlib import Path

from tests.slo_agreement.compare import disagreements
from tests.slo_agreement.harness import Evaluated, evaluate, prepare
from tests.slo_agreement.oracle import period_name
from tests.slo_agreement.results import SLO_ALERTS, Outcome
from tests.slo_agreement.scenarios import BY_NAME, SCENARIOS
from tests.slo_agreement.streams import Scenario

WINDOWS = ("5m", "1h", "6h", "1d")
SHORT = {"SLOErrorBudgetBurnPage": "page", "SLOErrorBudgetBurnTicket": "ticket",
         "SLOErrorBudgetExhausted": "exhausted", "SLOMetricAbsent": "absent",
         "SLOThresholdNotBucketEdge": "not-edge"}  # fmt: skip


def _v(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _minute(scn: Scenario, oracle: Outcome) -> int:
    fired = [m for m in sorted(oracle.firing) if oracle.firing[m]]
    return next(m for m in scn.checks if m >= fired[0]) if fired else scn.minutes


def _cell(r: Evaluated, m: int, window: str | None) -> str:
    parts = []
    for o in (r.oracle, r.prometheus, r.store):
        reading = o.readings.get(m)
        if reading is None:
            parts.append("(none)")
        elif window is None:
            parts.append(_v(reading.budget_remaining))
        else:
            w = reading.windows.get(window)
            parts.append(_v(w.ratio if w is not None else None))
    return " / ".join(parts)


def number_row(scn: Scenario, r: Evaluated) -> str:
    m = _minute(scn, r.oracle)
    cells = [_cell(r, m, w) for w in (*WINDOWS, period_name(scn))] + [_cell(r, m, None)]
    return f"| {scn.name} | {m} | " + " | ".join(cells) + " |"


def _exact_differences(r: Evaluated) -> str:
    out = []
    for o in (r.prometheus, r.store):
        for alert in o.alerts:
            diff = [m for m in sorted(o.firing) if (alert in o.firing[m]) != (alert in r.oracle.firing[m])]
            if diff:
                out.append(
                    f"{o.source} {SHORT[alert]} at {', '.join(map(str, diff[:4]))}{' ...' if len(diff) > 4 else ''}"
                )
    return "; ".join(out) or "none"


def alert_row(scn: Scenario, r: Evaluated) -> str:
    cells = []
    for alert in SLO_ALERTS:
        firsts = [
            o.first_fire(alert) if alert in o.alerts else None for o in (r.oracle, r.prometheus, r.store)
        ]
        cells.append(" / ".join("—" if f is None else str(f) for f in firsts))
    return f"| {scn.name} | " + " | ".join(cells) + f" | {_exact_differences(r)} |"


def main(argv: list[str]) -> int:
    logging.disable(logging.CRITICAL)
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    chosen = tuple(BY_NAME[n] for n in argv) if argv else SCENARIOS
    work = Path(tempfile.mkdtemp(prefix="m3mon-agreement-table-"))
    try:
        prepared = prepare(chosen, work)
        numbers = ["| scenario | minute | " + " | ".join(WINDOWS) + " | period | budget remaining |",
                   "|---" * (len(WINDOWS) + 4) + "|"]  # fmt: skip
        alerts = ["| scenario | " + " | ".join(SHORT[a] for a in SLO_ALERTS) + " | exact differences |",
                  "|---" * (len(SLO_ALERTS) + 2) + "|"]  # fmt: skip
        failed = []
        for scn in chosen:
            r = evaluate(scn, prepared, promtool, work / scn.name)
            numbers.append(number_row(scn, r))
            alerts.append(alert_row(scn, r))
            if disagreements(scn, r.oracle, [r.prometheus, r.store]):
                failed.append(scn.name)
        print("\n".join(numbers), "", "\n".join(alerts), "", sep="\n")
        print(
            f"{len(chosen) - len(failed)} of {len(chosen)} scenarios agree"
            + (f"; disagree: {', '.join(failed)}" if failed else "")
        )
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
