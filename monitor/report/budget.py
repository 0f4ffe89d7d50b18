"""The report's "Error budget: policy and time to exhaustion" section, at the report's end.

Per class the error-budget policy's verdict (:mod:`monitor.slo.policy`: would ``m3mon budget
gate`` let a deploy through?) and per SLO the projected time until its period's budget runs out
at the burn of the last hour and of the last day (:mod:`monitor.slo.exhaustion`), from the same
stored events as the rest of the report. The policy judges every SLO of the class, per-tenant
ones included (as the gate does); the exhaustion table lists the class's own SLOs only. Texts
are final here; the renderers only place them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from monitor.conventions import EXHAUSTION_WINDOWS
from monitor.model import Model
from monitor.report.events import Windows
from monitor.slo.evaluate import evaluate_counts
from monitor.slo.exhaustion import exhaustion, exhaustion_alert, format_seconds
from monitor.slo.policy import PolicyState, policy_state


@dataclass(frozen=True)
class ExhaustionLine:
    slo: str
    seconds: tuple[float | None, ...]  # per EXHAUSTION_WINDOWS; None: no data, inf: not burning
    shown: tuple[str, ...]  # the same as text: "4d 9h", "never", "no data"
    limit: str | None  # the SLO's exhaustion_within, as text
    alerting: bool  # whether its exhaustion alert condition holds at the end


@dataclass(frozen=True)
class ClassBudget:
    name: str
    frozen: bool
    verdict: str  # the gate's line: "ok: …" / "frozen: …"
    detail: str  # the line without its verdict word (reasons past REASONS_SHOWN counted), for the formats
    slos: tuple[ExhaustionLine, ...]


def collect_budget(model: Model, w: Windows, end: float) -> tuple[ClassBudget, ...]:
    out = []
    for rc in model.classes:
        evaluations = [evaluate_counts(slo, end, w.counts.counts) for slo in rc.slos]
        lines = []
        for slo, e in zip(rc.slos, evaluations, strict=True):
            if slo.tenant is not None or slo.priority is not None:
                continue  # per tenant or band: the Tenants section shows their budget (report/tenants.py)
            seconds = tuple(t for _, t in exhaustion(e).by_window)
            limit = format_seconds(slo.exhaustion_within) if slo.exhaustion_within else None
            lines.append(
                ExhaustionLine(
                    slo.name, seconds, tuple(map(format_seconds, seconds)), limit, exhaustion_alert(slo, e)
                )
            )
        state = policy_state(rc, evaluations)
        out.append(ClassBudget(rc.name, state.frozen, state.line(), _folded(state), tuple(lines)))
    return tuple(out)


#: How many of a frozen class's reasons the report's formats name (report.json's verdict has all).
REASONS_SHOWN = 5


def _folded(state: PolicyState) -> str:
    """The gate's detail, its reasons after the first :data:`REASONS_SHOWN` counted, not listed (a
    class with a hundred per-tenant SLOs may have a hundred)."""
    more = len(state.reasons) - REASONS_SHOWN
    if not state.frozen or more <= 0:
        return state.detail()
    shown = "; ".join(state.reasons[:REASONS_SHOWN])
    return f"{state.request_class}: {shown}; and {more} more SLOs (report.json's verdict lists each)"


def markdown(items: Sequence[ClassBudget], escape: Any, table: Any) -> list[str]:
    """Markdown lines (``escape`` and ``table`` are the Markdown renderer's)."""
    if not items:
        return []
    out = ["## Error budget: policy and time to exhaustion", ""]
    out += [f"- {'**deploys frozen**' if c.frozen else 'deploys open'}: {escape(c.detail)}" for c in items]
    head = ["class", "SLO", *(f"budget out at {w} burn" for w in EXHAUSTION_WINDOWS), "alert within"]
    rows = [
        [escape(c.name), escape(s.slo), *s.shown, (s.limit or "—") + (" (firing)" if s.alerting else "")]
        for c in items
        for s in c.slos
    ]
    return [*out, "", *table(head, rows)]


def to_json(items: Sequence[ClassBudget]) -> list[dict[str, Any]]:
    """JSON values: seconds, null for no data, the string "never" while nothing burns."""
    return [
        {
            "class": c.name,
            "frozen": c.frozen,
            "verdict": c.verdict,
            "slos": [
                {
                    "slo": s.slo,
                    "time_to_exhaustion": {
                        w: ("never" if t == float("inf") else t)
                        for w, t in zip(EXHAUSTION_WINDOWS, s.seconds, strict=True)
                    },
                    "exhaustion_within": s.limit,
                    "alerting": s.alerting,
                }
                for s in c.slos
            ],
        }
        for c in items
    ]
