"""Building :class:`~monitor.report.data.ReportData` from the store.

Every number comes from the store's tables through its own window arithmetic
(:class:`monitor.store.counts.EventCounts`: good/total of an SLO over slices ending in
``(start, end]``) and :func:`monitor.slo.evaluate.window_result` (attainment, budget remaining,
burn rate), so the report agrees with the stored evaluations and the exporter to the event. Probe,
incident, deployment and capacity facts are read with small queries over the store's ORM models
(:mod:`monitor.report.collect_probes`, :mod:`monitor.report.collect_ops`).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from monitor.model import SLO, Model
from monitor.report import collect_ops, collect_probes
from monitor.report.data import (
    RECENT_SECONDS,
    BudgetCost,
    ClassSummary,
    Incident,
    Period,
    ReportData,
    SeriesPoint,
    SLOLine,
    SLOSeries,
    slo_status,
    worst,
)
from monitor.report.events import Windows
from monitor.report.periods import previous
from monitor.report.redact import Redactor
from monitor.store.tables import IncidentRow

TITLE = "M3 weekly SLO report"
#: Spacing of the attainment / budget chart points.
SERIES_STEP = timedelta(hours=6)


def _ts(dt: datetime) -> float:
    return dt.timestamp()


def slo_line(w: Windows, slo: SLO, week: Period, prev: Period) -> SLOLine:
    this = w.result(slo, _ts(week.start), _ts(week.end))
    last = w.result(slo, _ts(prev.start), _ts(prev.end))
    recent = w.result(slo, max(_ts(week.start), _ts(week.end) - RECENT_SECONDS), _ts(week.end))
    period = w.period_at(slo, _ts(week.end))
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
    )


def slo_series(w: Windows, slo: SLO, week: Period) -> SLOSeries:
    """Cumulative attainment since the week's start and period budget left, every SERIES_STEP."""
    steps = max(1, math.ceil((week.end - week.start) / SERIES_STEP))
    points = []
    for k in range(1, steps + 1):
        at = min(week.start + k * SERIES_STEP, week.end)
        cumulative = w.result(slo, _ts(week.start), _ts(at))
        points.append(SeriesPoint(at, cumulative.attainment, w.period_at(slo, _ts(at)).budget_remaining))
    return SLOSeries(slo.request_class, slo.name, slo.objective, tuple(points))


def _incident_slos(model: Model, row: IncidentRow) -> list[SLO]:
    """SLOs an incident is about: its ``slo`` label (name or class/name), else all of its class."""
    slos = model.slos
    if row.slo:
        return [
            s for s in slos if s.id == row.slo or (s.name == row.slo and s.request_class == row.request_class)
        ]
    return [s for s in slos if s.request_class == row.request_class] if row.request_class else []


def incidents(model: Model, session: Session, w: Windows, week: Period, red: Redactor) -> list[Incident]:
    """Alerts that fired during the week (started before its end, not resolved before its start)."""
    start, end = _ts(week.start), _ts(week.end)
    i = IncidentRow
    q = (
        select(i)
        .where(i.starts_at < end, or_(i.ends_at.is_(None), i.ends_at > start))
        .order_by(i.starts_at, i.id)
    )
    tz = week.start.tzinfo
    out = []
    for row in session.scalars(q):
        until = row.ends_at if row.ends_at is not None else end
        costs = []
        for slo in _incident_slos(model, row):
            during = w.result(slo, row.starts_at, until)
            allowed = slo.budget * w.period_at(slo, end).total
            bad = during.total - during.good
            costs.append(BudgetCost(slo.id, bad, allowed, bad / allowed if allowed > 0 else None))
        ann = row.annotations or {}
        out.append(
            Incident(
                alertname=red.text(row.alertname),
                severity=red.text(row.severity or ""),
                request_class=red.text(row.request_class) if row.request_class else None,
                slo=red.text(row.slo) if row.slo else None,
                started_at=datetime.fromtimestamp(row.starts_at, tz),
                ended_at=datetime.fromtimestamp(row.ends_at, tz) if row.ends_at is not None else None,
                duration_seconds=max(0.0, until - row.starts_at),
                summary=red.text(str(ann.get("summary") or ann.get("description") or ann.get("title") or "")),
                labels=red.labels(row.labels or {}),
                costs=tuple(costs),
            )
        )
    return out


def collect(model: Model, session: Session, week: Period, now: datetime | None = None) -> ReportData:
    """Everything the report shows for ``week`` (and the comparison with the period before it)."""
    now = now or datetime.now(UTC)
    tz = week.start.tzinfo
    prev = previous(week)
    w = Windows(session)
    red = Redactor.for_model(model)
    classes: list[ClassSummary] = []
    series: list[SLOSeries] = []
    for rc in model.classes:
        lines = tuple(slo_line(w, slo, week, prev) for slo in rc.slos)
        classes.append(ClassSummary(rc.name, red.text(rc.description), worst(s.status for s in lines), lines))
        series.extend(slo_series(w, slo, week) for slo in rc.slos)
    probes = collect_probes.ProbeFacts(model, session, week, red)
    return ReportData(
        title=TITLE,
        source=Path(model.source).name,
        timezone=model.report.timezone,
        generated_at=now.astimezone(tz),
        week=week,
        previous_week=prev,
        classes=tuple(classes),
        series=tuple(series),
        latency=probes.latency(),
        breakdown=probes.breakdown(),
        incidents=tuple(incidents(model, session, w, week, red)),
        probe_failures=probes.failures(),
        deployments=collect_ops.deployments(model, session, w, week, red),
        capacity=collect_ops.capacity(model, session, week),
        deployment_window_seconds=collect_ops.DEPLOYMENT_WINDOW,
    )
