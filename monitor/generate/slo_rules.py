"""Per-SLO recording rules and multi-window multi-burn-rate alerts (docs/slo-events.md).

For each SLO, its objective (its budget, 1 − objective, is a constant in every expression), then
per rule step (:mod:`monitor.generate.sli`): the cumulative valid and bad events of each target and
endpoint and when they were sampled, then the step's events outside maintenance (what maintenance
excluded is counted by the store and shown in the report, not recorded here). Each window's valid
and bad events are the **sum of the step records** over the window — exact, never extrapolated —
and the error ratio Σbad / Σvalid is recorded, for the windows of
:data:`monitor.conventions.RECORDED_WINDOWS` and the SLO period, only while the window holds
events, so no NaN ever reaches a record, an alert or a dashboard (:mod:`monitor.generate.windows`
sums the other windows on demand). Then the budget remaining over the period, the page and ticket
burn alerts of :data:`monitor.conventions.BURN_ALERTS` with their minimum-events guard
(:func:`monitor.slo.guard.min_events`), budget-exhausted, metric-absent and, for server latency
SLOs, threshold-not-a-bucket-edge. Every alert reads the step records (or the raw series) itself,
never a window, ratio or budget record: those are for dashboards and notifications, and an engine
that does not see records written earlier in the same group run (vmalert) would otherwise lag one
evaluation per hop (docs/fleet.md).
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import notify
from monitor.generate import promql as q
from monitor.generate import windows as win
from monitor.generate.exhaustion import exhaustion_expr
from monitor.generate.rules import Alert, Group, record
from monitor.generate.sli import (
    absent_condition,
    activity_window,
    cumulative,
    sampled_at,
    step_events,
    threshold_not_edge,
)
from monitor.generate.sli import ids as _ids
from monitor.model import SLO, Model
from monitor.slo import burn
from monitor.slo.guard import min_events


def slo_labels(slo: SLO) -> dict[str, str]:
    """The labels of the SLO's records and alerts; one declared per tenant or band also names its
    tenant, its band and the name it was declared under (constant per SLO: no more series)."""
    out = {cv.L_CLASS: slo.request_class, cv.L_SLO: slo.name, cv.L_SLI: slo.sli}
    if slo.tenant is not None or slo.priority is not None:
        out[cv.L_DECLARED_SLO] = slo.declared
    if slo.tenant is not None:
        out[cv.L_TENANT] = slo.tenant
    if slo.priority is not None:
        out[cv.L_PRIORITY] = slo.priority
    return out


def windows(slo: SLO) -> list[str]:
    """Windows whose error ratio is recorded for ``slo``, shortest first, then its period."""
    return [w for w, _ in cv.ROLLING_WINDOWS if w in cv.RECORDED_WINDOWS] + [slo.period_window]


def _window_records(model: Model, slo: SLO, window: str, labels: dict[str, str]) -> list[dict[str, str]]:
    """The records of one recorded window: its error ratio, summed from the step records."""
    return [record(cv.sli_error_ratio_record(window), win.on_demand_ratio(_ids(slo), window), labels)]


def step_records(model: Model, slo: SLO) -> list[dict[str, str]]:
    """Per target and endpoint, what the next step measures from; then this step's events.

    The step records read the previous step's records strictly before their own instant, and the
    cumulative records of their own instant where the engine shows them (a scrape landing between
    the rules then counts in one step only). So the readings come first, valid before bad
    (:func:`monitor.generate.sli.step_rises` relies on that order).
    """
    c, labels = cumulative(model, slo), slo_labels(slo)
    out = [
        record(cv.slo_cumulative_events_record("valid"), c.valid, labels),
        record(cv.slo_cumulative_events_record("bad"), c.bad, labels),
        record(cv.SLO_SAMPLED_RECORD, sampled_at(c), labels),
    ]
    for kind in ("valid", "bad"):
        out.append(record(cv.slo_step_events_record(kind), step_events(model, slo, kind), labels))
    return out


def recording_rules(model: Model, slo: SLO) -> Group:
    """The SLO's objective, the step records, the recorded windows' ratios, and the budget."""
    labels = slo_labels(slo)
    records = [record(cv.SLO_META_OBJECTIVE_RECORD, f"vector({q.num(slo.objective)})", labels)]
    records += step_records(model, slo)
    records += [r for w in windows(slo) for r in _window_records(model, slo, w, labels)]
    period_ratio = cv.sli_error_ratio_record(slo.period_window) + _ids(slo)
    records.append(
        record(cv.SLO_BUDGET_REMAINING_RECORD, f"1 - {period_ratio} / {q.num(slo.budget)}", labels)
    )
    return Group(f"m3mon-slo-sli-{slo.request_class}-{slo.name}", records=tuple(records))


def _summed(kind: str, slo: SLO, window: str) -> str:
    """``kind`` events of ``window`` summed from the step records (no window record in between)."""
    return win.summed(kind, _ids(slo), window)


def burn_condition(slo: SLO, severity: str) -> str:
    """Every BURN_ALERTS row of ``severity``: short and long ratio above f×budget, guard filled.

    The ratios are summed from the step records here rather than read from the window and ratio
    records: an engine that does not see a record written earlier in the same group run (vmalert)
    then reads the step records one run old, never three (step -> window -> ratio -> alert), so
    its pages lag Prometheus' by at most one evaluation (docs/fleet.md).
    """
    parts = []
    for b in (b for b in cv.BURN_ALERTS if b.severity == severity):
        threshold = f"({q.num(burn.factor(slo, b), 12)} * {q.num(slo.budget, 12)})"
        ratio = {w: f"{_summed('bad', slo, w)}\n    /\n    {_summed('valid', slo, w)}"
                 for w in (b.short_window, b.long_window)}  # fmt: skip
        short = f"{ratio[b.short_window]}\n    > {threshold}"
        long = f"{ratio[b.long_window]}\n    > {threshold}"
        guard = f"{_summed('valid', slo, b.long_window)} >= {min_events(slo, b)}"
        fresh = f"{_summed('valid', slo, b.short_window)} > 0"  # the short window holds events now
        parts.append(f"(\n    {short}\n  and\n    {long}\n  and\n    {guard}\n  and\n    {fresh}\n)")
    return "\nor\n".join(parts)


#: What users see when an SLO of these SLIs burns, named in its burn alerts' summary: a stream that
#: pauses mid-response is stalled, not slow (its latency SLOs may all be met).
SLI_SYMPTOM: dict[str, str] = {"stall": "streams stalled mid-response"}


def burn_summary(slo: SLO, severity: str) -> str:
    symptom = SLI_SYMPTOM.get(slo.sli)
    what = f"{symptom}, error budget" if symptom else "error budget"
    return f"{slo.request_class} {slo.name}: {what} burning too fast ({severity})"


def _burn_alert(model: Model, slo: SLO, severity: str) -> Alert:
    rows = [b for b in cv.BURN_ALERTS if b.severity == severity]
    pairs = " or ".join(
        f"above {q.num(burn.factor(slo, b))}x over both {b.long_window} and {b.short_window}" for b in rows
    )
    return Alert(
        name=cv.ALERT_BURN_PAGE if severity == "page" else cv.ALERT_BURN_TICKET,
        expr=burn_condition(slo, severity),
        severity=severity,
        summary=burn_summary(slo, severity),
        description=(
            f"SLO {slo.id} ({slo.sli}, objective {slo.objective * 100:g}% over {slo.period_window}) is "
            f"burning its error budget {pairs} (measured rates in burn_rates)."
        ),
        labels=tuple((k, v) for k, v in slo_labels(slo).items()),
        annotations=tuple(
            (k, notify.template(parts)) for k, parts in burn_parts(model, slo, severity).items()
        ),
    )


def burn_parts(model: Model, slo: SLO, severity: str) -> dict[str, list[notify.Part]]:
    """The burn alert's annotations that report what burned (:mod:`monitor.generate.notify`)."""
    return notify.burn_annotations(model, slo, severity, exhaustion_expr(slo, cv.EXHAUSTION_WINDOWS[0]))


def _exhausted_alert(slo: SLO) -> Alert:
    return Alert(
        name=cv.ALERT_BUDGET_EXHAUSTED,
        expr=f"{win.budget_remaining(_ids(slo), slo.period_window, slo.budget)} <= 0",
        severity="ticket",
        summary=f"{slo.request_class} {slo.name}: error budget exhausted",
        description=(
            f"SLO {slo.id} has used its whole {slo.period_window} error budget. "
            "Freeze risky changes until it recovers."
        ),
        labels=tuple(slo_labels(slo).items()),
    )


def _absent_alert(model: Model, slo: SLO) -> Alert:
    what = {
        "probes": f"no probe of class {slo.request_class} completed within {activity_window(model, slo)}",
        "traffic": f"the monitor has counted no real request of class {slo.request_class} since it started",
    }.get(slo.source, "the server metric behind it is absent from every pool of the class")
    return Alert(
        name=cv.ALERT_METRIC_ABSENT,
        expr=absent_condition(model, slo),
        severity="ticket",
        for_=f"{burn.ABSENT_FOR}s" if burn.ABSENT_FOR % 60 else f"{burn.ABSENT_FOR // 60}m",
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
    out = [_burn_alert(model, slo, "page"), _burn_alert(model, slo, "ticket"), _exhausted_alert(slo)]
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
