"""``report.json``: every number of the report for other tools, under stable documented keys.

Keys are listed in docs/report.md ("report.json"). Ratios are 0..1 floats, durations are seconds,
times are ISO 8601 with the report's UTC offset, and ``null`` means "no data". The schema name
``m3mon.report/v1`` changes only when a key is renamed or removed.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from monitor.report import budget, display, maintenance
from monitor.report import contract as report_contract
from monitor.report import goodput as report_goodput
from monitor.report import tail as report_tail
from monitor.report import tenant_tail as report_tenant_tail
from monitor.report import tenants as report_tenants
from monitor.report.data import (
    Capacity,
    ClassSummary,
    DeploymentChange,
    Incident,
    Period,
    ReaderLine,
    ReportData,
    SLOLine,
    SLOSeries,
)
from monitor.report.latency_data import BREAKDOWN_PARTS, Breakdown, BreakdownSeries, LatencyStats

SCHEMA = "m3mon.report/v1"


def _t(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _period(p: Period) -> dict[str, Any]:
    return {"label": p.label, "start": _t(p.start), "end": _t(p.end), "history_seconds": p.history_seconds}


def _slo(s: SLOLine) -> dict[str, Any]:
    return {
        "slo": s.slo,
        "sli": s.sli,
        "objective": s.objective,
        "threshold_seconds": s.threshold,
        "period": s.period_window,
        "good": s.good,
        "total": s.total,
        "attainment": s.attainment,
        "attainment_previous": s.attainment_previous,
        "budget_remaining": s.budget_remaining,
        "burn_rate": s.burn_rate,
        "burn_rate_last_day": s.burn_rate_recent,
        "status": s.status,
        "budget_remaining_previous": s.budget_remaining_previous,
        "why": list(s.causes),
        "reason": display.reason(s) or None,
        "tenant": s.tenant,
        "priority": s.priority,
    }


def _class(c: ClassSummary) -> dict[str, Any]:
    return {
        "name": c.name,
        "description": c.description,
        "status": c.status,
        "slos": [_slo(s) for s in c.every_slo],
    }


def _series(s: SLOSeries) -> dict[str, Any]:
    points = [
        {
            "at": _t(p.at),
            "attainment": p.attainment,
            "budget_remaining": p.budget_remaining,
            "events": p.events,
        }
        for p in s.points
    ]
    return {"class": s.request_class, "slo": s.slo, "objective": s.objective, "points": points}


def _latency(s: LatencyStats) -> dict[str, Any]:
    return {
        "class": s.request_class,
        "kind": s.kind,
        "count": s.count,
        "p50_seconds": s.p50,
        "p95_seconds": s.p95,
        "p99_seconds": s.p99,
    }


def _breakdown(b: Breakdown) -> dict[str, Any]:
    out: dict[str, Any] = {"class": b.request_class, "count": b.count}
    out.update({f"{part}_seconds": b.part(part) for part in BREAKDOWN_PARTS})
    out["sources"] = {part: b.source(part) for part in BREAKDOWN_PARTS}
    out["population"] = b.population
    return out


def _breakdown_series(s: BreakdownSeries) -> dict[str, Any]:
    points = []
    for p in s.points:
        point: dict[str, Any] = {"at": _t(p.at), "count": p.count}
        point.update({f"{part}_seconds": p.part(part) for part in BREAKDOWN_PARTS})
        points.append(point)
    return {"class": s.request_class, "points": points}


def _reader(r: ReaderLine) -> dict[str, Any]:
    incident = r.incident
    return {
        "class": r.request_class,
        "status": r.status,
        "slo": r.slo,
        "attainment": r.attainment,
        "objective": r.objective,
        "period": r.period_window,
        "budget_remaining": r.budget_remaining,
        "attainment_previous": r.attainment_previous,
        "incident": None
        if incident is None
        else {
            "alertname": incident.alertname,
            "source": incident.source,
            "started_at": _t(incident.started_at),
            "share": r.incident_share,
        },
        "text": display.reader_line(r),
        "budget_remaining_previous": r.budget_previous,
        "incidents": [
            {
                "alertname": c.incident.alertname,
                "severity": c.incident.severity,
                "source": c.incident.source,
                "started_at": _t(c.incident.started_at),
                "costs": [{"slo": slo, "share": share} for slo, share in c.costs],
            }
            for c in r.costly
        ],
        "incidents_more": r.costly_more,
        "incidents_text": display.costly_line(r),
        "exhausted": [
            {"slo": e.slo, "seconds": e.seconds, "since": _t(e.since), "still": e.still} for e in r.exhausted
        ],
    }


def _incident(i: Incident) -> dict[str, Any]:
    return {
        "alertname": i.alertname,
        "severity": i.severity,
        "class": i.request_class,
        "slo": i.slo,
        "started_at": _t(i.started_at),
        "ended_at": _t(i.ended_at),
        "duration_seconds": i.duration_seconds,
        "summary": i.summary,
        "labels": dict(i.labels),
        "source": i.source,
        "peak_burn_rate": i.peak_burn,
        "budget_costs": [
            {"slo": c.slo_id, "bad_events": c.bad, "allowed_bad_events": c.allowed, "share": c.share}
            for c in i.costs
        ],
    }


def _deployment(d: DeploymentChange, hours: int) -> dict[str, Any]:
    return {
        "endpoint": d.endpoint,
        "at": _t(d.at),
        "changes": [{"field": f, "before": b, "after": a} for f, b, a in d.changes],
        "slos": [{"slo": s.slo_id, "before": s.before, "after": s.after} for s in d.slos],
        "text": display.deployment_line(d, hours),
    }


def _capacity(c: Capacity) -> dict[str, Any]:
    return {
        "endpoint": c.endpoint,
        "intervals": c.intervals,
        "peak_kv_cache_usage": c.peak_kv_cache,
        "preemptions": c.preemptions,
        "peak_waiting": c.peak_waiting,
        "mean_waiting": c.mean_waiting,
    }


def to_dict(data: ReportData) -> dict[str, Any]:
    """The report as plain JSON-ready values."""
    hours = data.deployment_window_hours
    return {
        "schema": SCHEMA,
        "title": data.title,
        "source": data.source,
        "timezone": data.timezone,
        "generated_at": _t(data.generated_at),
        "as_of": _t(data.end),
        "week": _period(data.week),
        "week_definition": data.week.definition,
        "previous_week": _period(data.previous_week),
        "status": data.status,
        "attention": [c.name for c in data.attention],
        "reader": [_reader(r) for r in data.reader],
        "classes": [_class(c) for c in data.classes],
        "series_step_seconds": data.series_step_seconds,
        "series": [_series(s) for s in data.series],
        "latency": [_latency(s) for s in data.latency],
        "breakdown": [_breakdown(b) for b in data.breakdown],
        "breakdown_series": [_breakdown_series(s) for s in data.breakdown_series],
        "incidents": [_incident(i) for i in data.incidents],
        "probe_failures": [
            {"class": f.request_class, "category": f.category, "count": f.count, "example": f.example}
            for f in data.probe_failures
        ],
        "deployment_window_seconds": data.deployment_window_seconds,
        "deployments": [_deployment(d, hours) for d in data.deployments],
        "capacity": [_capacity(c) for c in data.capacity],
        "budget": budget.to_json(data.budget),
        "contract": report_contract.to_json(data.contract),
        "maintenance": maintenance.to_json(data.maintenance),
        "goodput": report_goodput.to_json(data.goodput),
        "tenants": report_tenants.to_json(data.tenants, _slo),
        "tail": report_tail.to_json(data.tail),
        "traffic_tail": report_tail.to_json(data.traffic_tail),
        "bottleneck": [{"class": v.request_class, **v.to_json()} for v in data.bottleneck],
        "tenant_tail": report_tenant_tail.to_json(data.tenant_tail),
    }


def render_json(data: ReportData) -> str:
    """``report.json`` text (UTF-8, sorted nowhere: key order is the documented order)."""
    return json.dumps(to_dict(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
