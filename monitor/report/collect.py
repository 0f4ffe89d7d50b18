"""Building :class:`~monitor.report.data.ReportData` from the store.

Every number comes from the store's tables through its own window arithmetic
(:class:`monitor.store.counts.EventCounts`: good/total of an SLO over slices ending in
``(start, end]``) and :func:`monitor.slo.evaluate.window_result` (attainment, budget remaining,
burn rate), so the report agrees with the stored evaluations and the exporter to the event. Probe,
incident, deployment and capacity facts are read with small queries over the store's ORM models
(:mod:`monitor.report.collect_probes`, :mod:`monitor.report.collect_ops`,
:mod:`monitor.report.incidents`).

**Everything ends at** ``as_of`` = the period's end or ``now``, whichever is earlier: no event,
probe, span, evaluation, alert end or deployment after it is read, so the same command at the
same ``--now`` on the same database gives the same report, byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.orm import Session

from monitor.bottleneck.tenants import TenantTails, tenant_tails
from monitor.model import SLO, Model
from monitor.report import collect_ops, collect_probes, display, series
from monitor.report import contract as report_contract
from monitor.report import goodput as report_goodput
from monitor.report.budget import collect_budget
from monitor.report.collect_traffic import samples_in, traffic_tail
from monitor.report.data import (
    RECENT_SECONDS,
    ClassSummary,
    Period,
    ReportData,
    SLOLine,
    SLOSeries,
    slo_status,
    worst,
)
from monitor.report.events import Windows
from monitor.report.incidents import IncidentReader
from monitor.report.maintenance import collect_maintenance
from monitor.report.periods import previous
from monitor.report.reader import reader_lines
from monitor.report.redact import Redactor
from monitor.report.tenants import collect_tenants

TITLE = "M3 weekly SLO report"


def slo_line(w: Windows, slo: SLO, start: float, end: float, prev: tuple[float, float]) -> SLOLine:
    """One SLO over ``(start, end]``, compared with ``prev``; budget at ``end`` and at ``prev``'s end."""
    this = w.result(slo, start, end)
    last = w.result(slo, *prev)
    recent = w.result(slo, max(start, end - RECENT_SECONDS), end)
    period = w.period_at(slo, end)
    status = slo_status(this.attainment, slo.objective, period.budget_remaining, recent.burn_rate)
    return SLOLine(
        slo=slo.name,
        sli=slo.sli,
        objective=slo.objective,
        threshold=slo.threshold,
        period_window=slo.period_window,
        good=this.good,
        total=this.total,
        attainment=this.attainment,
        attainment_previous=last.attainment,
        budget_remaining=period.budget_remaining,
        burn_rate=this.burn_rate,
        burn_rate_recent=recent.burn_rate,
        status=status,
        budget_remaining_previous=w.period_at(slo, prev[1]).budget_remaining,
        tenant=slo.tenant,
        priority=slo.priority,
    )


def _redacted(tails: Sequence[TenantTails], red: Redactor) -> tuple[TenantTails, ...]:
    """Tenant labels may be client-sent ids (top tenants): redacted like every other text."""
    return tuple(
        dataclasses.replace(
            t, judged=tuple(dataclasses.replace(o, tenant=red.text(o.tenant)) for o in t.judged)
        )
        for t in tails
    )


def unscoped(slos: Sequence[SLO]) -> list[SLO]:
    """The SLOs declared for all of a class's traffic (not per tenant or band): those the SLO
    table, the exhaustion table and the charts show (the Tenants section shows the others)."""
    return [s for s in slos if s.tenant is None and s.priority is None]


def partial(period: Period, history: float | None) -> Period:
    """``period`` marked partial when the store's history (its first event, ``history``) begins
    after the period's start: the period then holds only ``end − history`` of data."""
    if history is None or history <= period.start.timestamp() or history > period.end.timestamp():
        return period
    return dataclasses.replace(period, history_from=datetime.fromtimestamp(history, period.start.tzinfo))


def as_of(week: Period, now: datetime) -> datetime:
    """Where the report's data ends: the period's end, or ``now`` when that is earlier."""
    at = min(week.end.timestamp(), max(week.start.timestamp(), now.timestamp()))
    return datetime.fromtimestamp(at, week.start.tzinfo)


def _points(session: Session, start: float, end: float) -> tuple[list[float], float]:
    """The series' instants (the opening one, every step after the first event, the end), step."""
    first = series.first_event(session, start, end)
    return ([], series.STEPS[0]) if first is None else series.points(first, end)


def collect(model: Model, session: Session, week: Period, now: datetime | None = None) -> ReportData:
    """Everything the report shows for ``week`` (and the comparison with the period before it)."""
    now = now or datetime.now(UTC)
    tz, end_at = week.start.tzinfo, as_of(week, now)
    start, end = week.start.timestamp(), end_at.timestamp()
    prev = partial(previous(week), series.history_start(session, end))
    prev_window = (prev.start.timestamp(), min(prev.end.timestamp(), end))
    w, red = Windows(session), Redactor.for_model(model)
    points, step = _points(session, start, end)
    classes: list[ClassSummary] = []
    slo_series: list[SLOSeries] = []
    for rc in model.classes:
        lines = tuple(slo_line(w, slo, start, end, prev_window) for slo in rc.slos)
        whole, scoped = tuple(s for s in lines if not s.scoped), tuple(s for s in lines if s.scoped)
        status = worst(s.status for s in lines)
        classes.append(ClassSummary(rc.name, red.text(rc.description), status, whole, scoped))
        slo_series += [series.slo_series(w, slo, start, points, tz) if points
                       else SLOSeries(rc.name, slo.name, slo.objective, ())
                       for slo in unscoped(rc.slos)]  # fmt: skip
    probes = collect_probes.ProbeFacts(model, session, week, red, end)
    incidents = tuple(IncidentReader(model, session, w, red, tz).incidents(start, end))
    traffic = samples_in(model, session, start, end)
    return ReportData(
        title=TITLE,
        source=Path(model.source).name,
        timezone=model.report.timezone,
        generated_at=now.astimezone(tz),
        week=week,
        previous_week=prev,
        classes=tuple(classes),
        series=tuple(slo_series),
        latency=probes.latency(),
        breakdown=probes.breakdown(),
        incidents=incidents,
        probe_failures=probes.failures(),
        deployments=collect_ops.deployments(model, session, w, week, red, end),
        capacity=collect_ops.capacity(model, session, week, end),
        deployment_window_seconds=collect_ops.DEPLOYMENT_WINDOW,
        as_of=end_at,
        series_step_seconds=step,
        breakdown_series=probes.breakdown_series(points, tz) if points else (),
        reader=reader_lines(classes, incidents, week.start, end_at, display.previous_label(prev)),
        budget=collect_budget(model, w, end),
        contract=report_contract.collect(model, session, end),
        maintenance=collect_maintenance(model, session, week.start, week.end, end, red),
        goodput=report_goodput.collect(model, session, start, end, probes.in_week),
        tail=probes.tail(),
        bottleneck=probes.bottleneck(),
        traffic_tail=traffic_tail(model, traffic),
        tenants=collect_tenants(classes),
        tenant_tail=_redacted(tenant_tails([c.name for c in model.classes], traffic), red),
    )
