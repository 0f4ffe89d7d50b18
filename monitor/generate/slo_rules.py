"""Per-SLO recording rules and multi-window multi-burn-rate alerts (SRE Workbook ch. 5, Sloth style).

For each SLO: the error ratio over every rolling window plus the SLO period (the period is the
mean of the 5m ratio, as Sloth's optimised rule), objective/budget/period metadata, the budget
remaining, a page and a ticket burn-rate alert built from :data:`monitor.conventions.BURN_ALERTS`,
a budget-exhausted alert and an alert when the SLI's source metric is absent.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.rules import Alert, Group, record
from monitor.generate.sli import error_ratio, presence_selector
from monitor.model import SLO, Model


def slo_labels(slo: SLO) -> dict[str, str]:
    return {cv.L_CLASS: slo.request_class, cv.L_SLO: slo.name, cv.L_SLI: slo.sli}


def _ids(slo: SLO) -> str:
    return q.matchers([(cv.L_CLASS, q.eq(slo.request_class)), (cv.L_SLO, q.eq(slo.name))])


def windows(slo: SLO) -> list[str]:
    """Rolling windows recorded for ``slo``, shortest first, then its period."""
    return [w for w, _ in cv.ROLLING_WINDOWS] + [slo.period_window]


def recording_rules(model: Model, slo: SLO) -> Group:
    labels = slo_labels(slo)
    records = [
        record(cv.sli_error_ratio_record(w), error_ratio(model, slo, w), labels)
        for w, _ in cv.ROLLING_WINDOWS
    ]
    short = cv.sli_error_ratio_record(cv.ROLLING_WINDOWS[0][0])
    records.append(
        record(
            cv.sli_error_ratio_record(slo.period_window),
            f"avg_over_time({short}{_ids(slo)}[{slo.period_window}])",
            labels,
        )
    )
    period_ratio = cv.sli_error_ratio_record(slo.period_window) + _ids(slo)
    records += [
        record(cv.SLO_META_OBJECTIVE_RECORD, f"vector({q.num(slo.objective)})", labels),
        record(cv.SLO_META_BUDGET_RECORD, f"vector({q.num(slo.budget)})", labels),
        record(cv.SLO_META_PERIOD_RECORD, f"vector({round(slo.period)})", labels),
        record(cv.SLO_BUDGET_REMAINING_RECORD, f"1 - {period_ratio} / {q.num(slo.budget)}", labels),
    ]
    return Group(f"m3mon-slo-sli-{slo.request_class}-{slo.name}", records=tuple(records))


def burn_condition(slo: SLO, severity: str) -> str:
    """``(short > f*budget and long > f*budget) or (...)`` for every BURN_ALERTS row of ``severity``."""
    parts = []
    for b in (b for b in cv.BURN_ALERTS if b.severity == severity):
        threshold = f"({q.num(b.factor(slo.period))} * {q.num(slo.budget)})"
        short = f"{cv.sli_error_ratio_record(b.short_window)}{_ids(slo)} > {threshold}"
        long = f"{cv.sli_error_ratio_record(b.long_window)}{_ids(slo)} > {threshold}"
        parts.append(f"(\n  {short}\n  and\n  {long}\n)")
    return "\nor\n".join(parts)


def _burn_alert(slo: SLO, severity: str) -> Alert:
    rows = [b for b in cv.BURN_ALERTS if b.severity == severity]
    pairs = ", ".join(
        f"{q.num(b.factor(slo.period))}x over {b.long_window} and {b.short_window}" for b in rows
    )
    return Alert(
        name=cv.ALERT_BURN_PAGE if severity == "page" else cv.ALERT_BURN_TICKET,
        expr=burn_condition(slo, severity),
        severity=severity,
        summary=f"{slo.request_class} {slo.name}: error budget burning too fast ({severity})",
        description=(
            f"SLO {slo.id} ({slo.sli}, objective {slo.objective * 100:g}% over {slo.period_window}) is "
            f"burning its error budget at {pairs}."
        ),
        labels=tuple((k, v) for k, v in slo_labels(slo).items()),
    )


def _exhausted_alert(slo: SLO) -> Alert:
    return Alert(
        name=cv.ALERT_BUDGET_EXHAUSTED,
        expr=f"{cv.SLO_BUDGET_REMAINING_RECORD}{_ids(slo)} <= 0",
        severity="ticket",
        for_="5m",
        summary=f"{slo.request_class} {slo.name}: error budget exhausted",
        description=(
            f"SLO {slo.id} has used its whole {slo.period_window} error budget. "
            "Freeze risky changes until it recovers."
        ),
        labels=tuple(slo_labels(slo).items()),
    )


def _absent_alert(model: Model, slo: SLO) -> Alert:
    return Alert(
        name=cv.ALERT_METRIC_ABSENT,
        expr=f"absent({presence_selector(model, slo)})",
        severity="ticket",
        for_="10m",
        summary=f"{slo.request_class} {slo.name}: SLI metric absent",
        description=(
            f"No samples of the metric behind SLO {slo.id} ({slo.source}) for 10 minutes; "
            "the SLO cannot be evaluated and its burn-rate alerts cannot fire."
        ),
        labels=tuple(slo_labels(slo).items()),
    )


def alert_rules(model: Model, slo: SLO) -> Group:
    alerts = (_burn_alert(slo, "page"), _burn_alert(slo, "ticket"), _exhausted_alert(slo))
    return Group(
        f"m3mon-slo-alerts-{slo.request_class}-{slo.name}", alerts=(*alerts, _absent_alert(model, slo))
    )


def slo_groups(model: Model) -> list[Group]:
    """Every SLO's recording group followed by its alert group, in config order."""
    out: list[Group] = []
    for slo in model.slos:
        out += [recording_rules(model, slo), alert_rules(model, slo)]
    return out
