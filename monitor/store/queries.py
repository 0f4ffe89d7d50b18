"""Read API for the weekly report: what happened in a time range ``[start, end)``.

Every function takes an open session (``with store.session() as s``) and returns plain frozen
records, so the report never touches ORM rows. Times are Unix seconds (UTC); days are UTC days.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.slo.evaluate import SLOEvaluation
from monitor.store.evaluations import EvaluationRepo
from monitor.store.tables import DeploymentRow, IncidentRow, ProbeResultRow, ScrapeIntervalRow


@dataclass(frozen=True)
class FailureCount:
    request_class: str
    kind: str
    reason: str
    count: int


@dataclass(frozen=True)
class Incident:
    alertname: str
    status: str
    starts_at: float
    ends_at: float | None
    request_class: str | None
    slo: str | None
    severity: str | None
    labels: dict[str, str]


@dataclass(frozen=True)
class DeploymentChange:
    endpoint: str
    first_seen: float
    last_seen: float
    vllm_version: str | None
    image_digest: str | None
    checkpoint: str | None
    max_model_len: int | None
    kv_cache_dtype: str | None


@dataclass(frozen=True)
class Capacity:
    """Capacity signals of one endpoint over the range, from the scrape intervals."""

    endpoint: str
    intervals: int
    peak_kv_cache_usage: float | None
    preemptions: float
    peak_waiting: float | None
    mean_waiting: float | None


@dataclass(frozen=True)
class DailyLatency:
    """Client-side latency percentiles of successful probes of one class on one UTC day."""

    request_class: str
    day: str  # YYYY-MM-DD
    metric: str  # "ttft" or "e2e"
    count: int
    p50: float
    p95: float
    p99: float


def evaluations(session: Session, start: float, end: float, slo_id: str | None = None) -> list[SLOEvaluation]:
    """Stored evaluations in the range, oldest first."""
    return EvaluationRepo(session).between(start, end, slo_id)


def probe_failures(session: Session, start: float, end: float) -> list[FailureCount]:
    """Failed probes by class, kind and failure category, most frequent first."""
    p = ProbeResultRow
    q = (
        select(p.request_class, p.kind, p.reason, func.count())
        .where(p.started_at >= start, p.started_at < end, p.reason.is_not(None))
        .group_by(p.request_class, p.kind, p.reason)
    )
    rows = [FailureCount(c, k, str(r), int(n)) for c, k, r, n in session.execute(q)]
    return sorted(rows, key=lambda f: (-f.count, f.request_class, f.kind, f.reason))


def incidents(session: Session, start: float, end: float) -> list[Incident]:
    """Alerts that were firing at some point in the range, by start time."""
    i = IncidentRow
    q = select(i).where(i.starts_at < end, (i.ends_at.is_(None)) | (i.ends_at >= start)).order_by(i.starts_at)
    return [
        Incident(
            r.alertname, r.status, r.starts_at, r.ends_at, r.request_class, r.slo, r.severity, dict(r.labels)
        )
        for r in session.scalars(q)
    ]


def deployment_changes(session: Session, start: float, end: float) -> list[DeploymentChange]:
    """Deployments first seen in the range (each one is a change of fingerprint)."""
    d = DeploymentRow
    q = select(d).where(d.first_seen >= start, d.first_seen < end).order_by(d.first_seen)
    return [
        DeploymentChange(
            r.endpoint,
            r.first_seen,
            r.last_seen,
            r.vllm_version,
            r.image_digest,
            r.checkpoint,
            r.max_model_len,
            r.kv_cache_dtype,
        )
        for r in session.scalars(q)
    ]


def capacity(session: Session, start: float, end: float) -> list[Capacity]:
    """Peak KV-cache use, preemptions and waiting requests per endpoint."""
    s = ScrapeIntervalRow
    q = (
        select(
            s.endpoint,
            func.count(),
            func.max(s.kv_cache_usage),
            func.coalesce(func.sum(s.preemptions), 0.0),
            func.max(s.waiting),
            func.avg(s.waiting),
        )
        .where(s.end >= start, s.end < end)
        .group_by(s.endpoint)
        .order_by(s.endpoint)
    )
    out = []
    for row in session.execute(q):
        e, n, kv, pre, w, mw = (cast(Any, v) for v in row)
        out.append(Capacity(str(e), int(n), _opt(kv), float(pre), _opt(w), _opt(mw)))
    return out


def _opt(value: Any) -> float | None:
    return None if value is None else float(value)


def _percentiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[49], cuts[94], cuts[98]


def daily_latency(session: Session, start: float, end: float) -> list[DailyLatency]:
    """p50/p95/p99 of TTFT and e2e of successful probes per class per UTC day."""
    p = ProbeResultRow
    q = select(p.request_class, p.started_at, p.ttft, p.e2e).where(
        p.started_at >= start, p.started_at < end, p.ok.is_(True)
    )
    samples: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for cls, at, ttft, e2e in session.execute(q):
        day = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")
        for metric, value in (("ttft", ttft), ("e2e", e2e)):
            if value is not None:
                samples[(cls, day, metric)].append(float(value))
    return [DailyLatency(c, d, m, len(v), *_percentiles(v)) for (c, d, m), v in sorted(samples.items())]
