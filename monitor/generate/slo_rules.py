"""Per-SLO recording rules and multi-window multi-burn-rate alerts (docs/slo-events.md).

For each SLO and each window (the rolling ones and the SLO period): the valid and bad event
counts (``increase``, from :func:`monitor.generate.sli.event_counts`) and the error ratio
Σbad / Σvalid — recorded only while the window holds events, so no NaN ever reaches a record, an
alert or a dashboard. Then objective/budget/period metadata, the budget remaining over the
period, the page and ticket burn alerts of :data:`monitor.conventions.BURN_ALERTS` with their
minimum-events guard (:func:`monitor.slo.guard.min_events`), budget-exhausted, metric-absent and,
for server latency SLOs, threshold-not-a-bucket-edge.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.rules import Alert, Group, record
from monitor.generate.sli import (
    absent_condition,
    activity_window,
    event_counts,
    maintenance_counts,
    threshold_not_edge,
)
from monitor.model import SLO, Model
from monitor.slo.guard import min_events


def slo_labels(slo: SLO) -> dict[str, str]:
    return {cv.L_CLASS: slo.request_class, cv.L_SLO: slo.name, cv.L_SLI: slo.sli}


def _ids(slo: SLO) -> str:
    return q.matchers([(cv.L_CLASS, q.eq(slo.request_class)), (cv.L_SLO, q.eq(slo.name))])


def windows(slo: SLO) -> list[str]:
    """Rolling windows recorded for ``slo``, shortest first, then its period."""
    return [w for w, _ in cv.ROLLING_WINDOWS] + [slo.period_window]


def _inside(window: str) -> str:
    """``window`` less half a rule step: the rule samples of ``(t - window, t]`` and not the one at
    ``t - window`` (Prometheus 2 range selectors include their left end)."""
    step = cv.window_seconds(cv.SLO_RULE_INTERVAL)
    return f"{cv.window_seconds(window) - step // 2}s"


def _outside_maintenance(counted: str, kind: str, slo: SLO, window: str) -> str:
    """``counted`` less the events that maintenance excluded in ``window``, never below 0."""
    masked = f"sum(sum_over_time({cv.slo_maintenance_events_record(kind)}{_ids(slo)}[{_inside(window)}]))"
    return f"clamp_min(\n{counted}\n-\n({masked} or vector(0)),\n0)"


def _window_records(model: Model, slo: SLO, window: str, labels: dict[str, str]) -> list[dict[str, str]]:
    bad, valid = event_counts(model, slo, window)
    bad_rec, valid_rec = cv.slo_bad_events_record(window), cv.slo_valid_events_record(window)
    ratio = f"{bad_rec}{_ids(slo)}\n/\n({valid_rec}{_ids(slo)} > 0)"
    return [
        record(valid_rec, _outside_maintenance(valid, "valid", slo, window), labels),
        record(bad_rec, _outside_maintenance(bad, "bad", slo, window), labels),
        record(cv.sli_error_ratio_record(window), ratio, labels),
    ]


def maintenance_records(model: Model, slo: SLO) -> list[dict[str, str]]:
    """This step's valid and bad events on endpoints in maintenance (absent outside maintenance)."""
    bad, valid = maintenance_counts(model, slo)
    labels = slo_labels(slo)
    return [
        record(cv.slo_maintenance_events_record("valid"), valid, labels),
        record(cv.slo_maintenance_events_record("bad"), bad, labels),
    ]


def recording_rules(model: Model, slo: SLO) -> Group:
    labels = slo_labels(slo)
    records = maintenance_records(model, slo)
    records += [r for w in windows(slo) for r in _window_records(model, slo, w, labels)]
    period_ratio = cv.sli_error_ratio_record(slo.period_window) + _ids(slo)
    records += [
        record(cv.SLO_META_OBJECTIVE_RECORD, f"vector({q.num(slo.objective)})", labels),
        record(cv.SLO_META_BUDGET_RECORD, f"vector({q.num(slo.budget)})", labels),
        record(cv.SLO_META_PERIOD_RECORD, f"vector({round(slo.period)})", labels),
        record(cv.SLO_BUDGET_REMAINING_RECORD, f"1 - {period_ratio} / {q.num(slo.budget)}", labels),
    ]
    return Group(f"m3mon-slo-sli-{slo.request_class}-{slo.name}", records=tuple(records))


def burn_condition(slo: SLO, severity: str) -> str:
    """Every BURN_ALERTS row of ``severity``: short and long ratio above f×budget, guard filled."""
    parts = []
    for b in (b for b in cv.BURN_ALERTS if b.severity == severity):
        threshold = f"({q.num(b.factor(slo.period), 12)} * {q.num(slo.budget, 12)})"
        short = f"{cv.sli_error_ratio_record(b.short_window)}{_ids(slo)} > {threshold}"
        long = f"{cv.sli_error_ratio_record(b.long_window)}{_ids(slo)} > {threshold}"
        guard = f"{cv.slo_valid_events_record(b.long_window)}{_ids(slo)} >= {min_events(slo, b)}"
        parts.append(f"(\n  {short}\n  and\n  {long}\n  and\n  {guard}\n)")
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
        summary=f"{slo.request_class} {slo.name}: error budget exhausted",
        description=(
            f"SLO {slo.id} has used its whole {slo.period_window} error budget. "
            "Freeze risky changes until it recovers."
        ),
        labels=tuple(slo_labels(slo).items()),
    )


def _absent_alert(model: Model, slo: SLO) -> Alert:
    what = (
        f"no probe of class {slo.request_class} completed within {activity_window(model, slo)}"
        if slo.source == "probes"
        else "the server metric behind it is absent from every pool of the class"
    )
    return Alert(
        name=cv.ALERT_METRIC_ABSENT,
        expr=absent_condition(model, slo),
        severity="ticket",
        for_="10m",
        summary=f"{slo.request_class} {slo.name}: SLI metric absent",
        description=(
            f"SLO {slo.id} ({slo.source}) has no data: {what}. "
            "The SLO cannot be evaluated and its burn-rate alerts cannot fire."
        ),
        labels=tuple(slo_labels(slo).items()),
    )


def _edge_alert(model: Model, slo: SLO) -> Alert | None:
    expr = threshold_not_edge(model, slo)
    if expr is None:
        return None
    return Alert(
        name=cv.ALERT_THRESHOLD_NOT_EDGE,
        expr=expr,
        severity="ticket",
        for_="5m",
        summary=f"{slo.request_class} {slo.name}: threshold is not a bucket edge on "
        + "{{ $labels.endpoint }}",
        description=(
            f"SLO {slo.id} counts requests at or under {slo.threshold:g}s from the server's {slo.sli} "
            "histogram, but endpoint {{ $labels.endpoint }} has no bucket edge there (custom "
            "buckets or another vLLM version). That endpoint gives the SLO no data until the "
            "threshold or the buckets change."
        ),
        labels=tuple(slo_labels(slo).items()),
    )


def alerts(model: Model, slo: SLO) -> tuple[Alert, ...]:
    out = [_burn_alert(slo, "page"), _burn_alert(slo, "ticket"), _exhausted_alert(slo)]
    out.append(_absent_alert(model, slo))
    edge = _edge_alert(model, slo)
    if edge is not None:
        out.append(edge)
    return tuple(out)


def slo_groups(model: Model, request_class: str | None = None) -> list[Group]:
    """One group per SLO, in config order: its records, then its alerts.

    Alerts sit in the group of the records they read: Prometheus evaluates a group's rules in
    order, so an alert sees the records of the same instant (across groups it could lag a step).
    """
    out = []
    for slo in (s for s in model.slos if request_class in (None, s.request_class)):
        records = recording_rules(model, slo).records
        name = f"m3mon-slo-{slo.request_class}-{slo.name}"
        out.append(Group(name, records=records, alerts=alerts(model, slo), interval=cv.SLO_RULE_INTERVAL))
    return out
