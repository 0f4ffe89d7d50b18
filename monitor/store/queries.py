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

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from monitor.conventions import BURN_ALERTS, PURPOSE_KEY, PURPOSE_SLI
from monitor.slo.evaluate import STATUS_BURNING, STATUS_EXHAUSTED, SLOEvaluation, WindowResult
from monitor.store.evaluations import EvaluationRepo, window_results
from monitor.store.tables import (
    DeploymentRow,
    EvaluationRow,
    IncidentRow,
    ProbeResultRow,
    ScrapeIntervalRow,
    ServerSpanRow,
)

#: The stored probe runs that are SLI events: scheduled rounds, not diagnostic ones such as a
#: confirmation round (``ProbeResult.purpose``; a row stored before the purpose was is a round).
SLI_RUN: ColumnElement[bool] = (
    func.coalesce(ProbeResultRow.extra[PURPOSE_KEY].as_string(), PURPOSE_SLI) == PURPOSE_SLI
)


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
        .where(p.started_at >= start, p.started_at < end, p.reason.is_not(None), SLI_RUN)
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


#: Evaluations this long before a range are read too: an incident may start before it.
BURN_LOOKBACK = 3 * 86400.0
#: The window whose burn rate a derived incident reports as its peak (the page alert's long window).
PEAK_WINDOW = BURN_ALERTS[0].long_window
#: The windows the burn-rate conditions read.
BURN_WINDOWS = tuple(sorted({w for a in BURN_ALERTS for w in (a.long_window, a.short_window)}))
#: Statuses under which a burn-rate condition may hold (``exhausted`` takes precedence over
#: ``burning`` in the stored status, but the pager's burn alerts fire regardless).
HOT = (STATUS_BURNING, STATUS_EXHAUSTED)


@dataclass(frozen=True)
class StoredBurn:
    """One stored evaluation that was burning or had its budget exhausted, with the windows the
    burn-rate conditions read (so a caller with the SLO can check them: :func:`burn_alerts`)."""

    slo_id: str
    request_class: str
    slo_name: str
    evaluated_at: float
    status: str
    severity: str | None
    windows: tuple[WindowResult, ...]

    def burn_rate(self, window: str = PEAK_WINDOW) -> float | None:
        return next((w.burn_rate for w in self.windows if w.window == window), None)


def burn_evaluations(
    session: Session, start: float, end: float
) -> tuple[list[StoredBurn], dict[str, list[float]]]:
    """Evaluations in ``(start − BURN_LOOKBACK, end]`` that were burning or exhausted, oldest first,
    and per SLO among them the instants of its other evaluations after its first such one ("calm").

    Only evaluations up to ``end`` are read, so the answer for a past ``end`` never changes.
    """
    e = EvaluationRow
    span = (e.evaluated_at > start - BURN_LOOKBACK, e.evaluated_at <= end)
    cols = (e.slo_id, e.request_class, e.slo_name, e.evaluated_at, e.status, e.severity, e.windows)
    q = select(*cols).where(*span, e.status.in_(HOT)).order_by(e.evaluated_at, e.slo_id)
    burns = [
        StoredBurn(r.slo_id, r.request_class, r.slo_name, float(r.evaluated_at), r.status, r.severity,
                   tuple(w for w in window_results(r.windows, r.evaluated_at) if w.window in BURN_WINDOWS))
        for r in session.execute(q)
    ]  # fmt: skip
    calm: dict[str, list[float]] = defaultdict(list)
    if burns:
        first = min(b.evaluated_at for b in burns)
        quiet = select(e.slo_id, e.evaluated_at).where(
            *span, e.evaluated_at > first, e.status.not_in(HOT),
            e.slo_id.in_({b.slo_id for b in burns}),
        )  # fmt: skip
        for slo_id, at in session.execute(quiet):
            calm[slo_id].append(float(at))
    return burns, calm


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
        p.started_at >= start, p.started_at < end, p.ok.is_(True), SLI_RUN
    )
    samples: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for cls, at, ttft, e2e in session.execute(q):
        day = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")
        for metric, value in (("ttft", ttft), ("e2e", e2e)):
            if value is not None:
                samples[(cls, day, metric)].append(float(value))
    return [DailyLatency(c, d, m, len(v), *_percentiles(v)) for (c, d, m), v in sorted(samples.items())]


def real_traffic(
    start: float, end: float, probes_since: float | None = None
) -> tuple[ColumnElement[bool], ...]:
    """The ``server_spans`` of real traffic in ``(start, end]``: ended in it, in no probe's trace
    (the one population the report's goodput section, its real-traffic tail and the contract's
    context use count). ``probes_since``: only probes started after it can own those spans (a
    short window's read need not scan every stored probe)."""
    probe_traces = select(ProbeResultRow.trace_id).where(ProbeResultRow.trace_id.is_not(None))
    if probes_since is not None:
        probe_traces = probe_traces.where(ProbeResultRow.started_at > probes_since)
    return (
        ServerSpanRow.end_time > start,
        ServerSpanRow.end_time <= end,
        ServerSpanRow.trace_id.not_in(probe_traces),
    )
