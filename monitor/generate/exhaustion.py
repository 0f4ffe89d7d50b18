"""Time-to-exhaustion recording rules and the ``exhaustion_within`` alert (docs: monitor/slo/exhaustion.py).

Per SLO and per window of :data:`monitor.conventions.EXHAUSTION_WINDOWS` one record,
``m3mon:slo_time_to_exhaustion:seconds{window}``, read from the SLO's own records (the budget
left over the period and the window's error ratio record, both Σbad/Σvalid of the step records),
so the pager projects from the events the store counts:

    clamp_min(R <= 0, 0)  or  R × P / (ratio_w / budget)

0 once the budget is spent, +Inf while the window has events and none bad, nothing without
events. For SLOs with ``exhaustion_within`` a ticket fires while both windows project exhaustion
sooner and the long window holds the guard's events; the alert computes both projections from the
step records itself (:func:`direct_exhaustion_expr`), not from these records, so it is one hop from
the step records in every engine. These groups sit beside the SLO groups (their own rule group per
SLO; records of another group can lag one evaluation step).
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate import windows as win
from monitor.generate.rules import Alert, Group, record
from monitor.model import SLO, Model
from monitor.slo.exhaustion import format_seconds, guard


def _ids(slo: SLO) -> str:
    return q.matchers([(cv.L_CLASS, q.eq(slo.request_class)), (cv.L_SLO, q.eq(slo.name))])


def _labels(slo: SLO, window: str | None = None) -> dict[str, str]:
    out = {cv.L_CLASS: slo.request_class, cv.L_SLO: slo.name, cv.L_SLI: slo.sli}
    return {**out, cv.L_WINDOW: window} if window else out


def _selector(slo: SLO, window: str) -> str:
    pairs = [(cv.L_CLASS, q.eq(slo.request_class)), (cv.L_SLO, q.eq(slo.name)), (cv.L_WINDOW, q.eq(window))]
    return cv.SLO_EXHAUSTION_RECORD + q.matchers(pairs)


def exhaustion_expr(slo: SLO, window: str) -> str:
    """The projection of ``window`` from the SLO's budget and ratio records (the record's expression)."""
    remaining = cv.SLO_BUDGET_REMAINING_RECORD + _ids(slo)
    burn = f"({cv.sli_error_ratio_record(window)}{_ids(slo)} / {q.num(slo.budget, 12)})"
    return f"clamp_min({remaining} <= 0, 0)\nor\n{remaining} * {round(slo.period)} / {burn}"


def direct_exhaustion_expr(slo: SLO, window: str) -> str:
    """The same projection summed from the step records (what the alert reads).

    One hop from the step records, never three (step -> ratio / budget -> projection -> alert):
    vmalert, which does not see a record written earlier in the same run, then lags Prometheus by
    at most one evaluation (docs/fleet.md).
    """
    remaining = win.budget_remaining(_ids(slo), slo.period_window, slo.budget)
    burn = f"({win.on_demand_ratio(_ids(slo), window)} / {q.num(slo.budget, 12)})"
    return f"(\n  clamp_min({remaining} <= 0, 0)\nor\n  {remaining} * {round(slo.period)} / {burn}\n)"


def _alert(slo: SLO) -> Alert:
    assert slo.exhaustion_within is not None
    limit = round(slo.exhaustion_within)
    short, long = cv.EXHAUSTION_WINDOWS
    guarded = f"{win.summed('valid', _ids(slo), long)} >= {guard(slo)}"
    below = [f"{direct_exhaustion_expr(slo, w)} < {limit}" for w in (short, long)]
    expr = "\nand\n".join([*below, guarded])
    return Alert(
        name=cv.ALERT_EXHAUSTION_SOON,
        expr=expr,
        severity="ticket",
        summary=f"{slo.request_class} {slo.name}: error budget runs out within {format_seconds(limit)}",
        description=(
            f"At the burn of the last {short} and of the last {long}, SLO {slo.id} spends what is left of "
            f"its {slo.period_window} error budget in less than {format_seconds(limit)}."
        ),
        labels=tuple(_labels(slo).items()),
    )


def exhaustion_groups(model: Model, request_class: str | None = None) -> list[Group]:
    """One group per SLO of ``request_class`` (all when None): its records, then its alert."""
    out = []
    for slo in (s for s in model.slos if request_class in (None, s.request_class)):
        records = tuple(
            record(cv.SLO_EXHAUSTION_RECORD, exhaustion_expr(slo, w), _labels(slo, w))
            for w in cv.EXHAUSTION_WINDOWS
        )
        alerts = (_alert(slo),) if slo.exhaustion_within is not None else ()
        out.append(Group(f"m3mon-exhaustion-{slo.request_class}-{slo.name}", records=records, alerts=alerts))
    return out
