"""Probe facts for the report: latency percentiles, the latency breakdown, failures by category.

Read from ``probe_results`` for probes started in ``(start, end]`` whose outcome was known by the
report's end (start + e2e, or + the class's probe timeout when no e2e was measured), so a report
built again at the same ``--now`` reads the same probes, and outside maintenance as the SLIs count
them (a run whose outcome was known inside an occurrence covering its class and endpoint is no
event: :func:`outside_maintenance`, nor is a confirmation round: :data:`SLI_RUN`; latency,
breakdown, failures and goodput read the same runs).
Latency only counts probes the service answered (not an availability failure), as the SLO slices do:

* TTFT and end-to-end: one value per probe, percentiles are linear interpolations between order
  statistics (numpy's default);
* ITL: every per-token sample of every probe, pooled from the probes' stored histograms
  (``itl_histogram``, fixed edges 1 ms × 1.2^i; percentiles interpolated inside the bucket, within
  20 %); probes stored before migration 0004 have none and do not count;
* breakdown parts (:mod:`monitor.report.breakdown`) are means over the probes that reported the
  part (server queue, prefill and decode from the server's per-request view, network = client
  TTFT − server TTFT, tool turnaround = the sum of a probe's tool rounds). A probe that recorded
  no server view (no queue, prefill or decode) takes it from the vLLM ``llm_request`` span of its
  trace when one was received (``server_spans``, up to the report's end; the trace's earliest span
  with a server part, i.e. the probe's first request), with network = client TTFT − the span's
  TTFT; without one, the earliest GenAI span with a first-chunk time gives the network part only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, and_, case, func, not_, or_, select
from sqlalchemy.orm import Session

from monitor.bottleneck.rules import Verdict
from monitor.bottleneck.tail import SOURCE_METRICS, SOURCE_SPANS, Sample, TailShare, attribute
from monitor.events import MONITOR, UNANSWERED
from monitor.model import Model
from monitor.probes import gaps
from monitor.report import breakdown as brk
from monitor.report import collect_bottleneck
from monitor.report.collect_bottleneck import timing
from monitor.report.data import Period, ProbeFailure
from monitor.report.latency_data import LATENCY_KINDS, Breakdown, BreakdownSeries, LatencyStats
from monitor.report.redact import Redactor
from monitor.store.ops import COMPLETED_AT
from monitor.store.queries import SLI_RUN
from monitor.store.tables import ProbeResultRow, ServerSpanRow
from monitor.traces.span import ServerSpan
from monitor.traces.stages import trace_stages

P = ProbeResultRow
S = ServerSpanRow


#: SQL for each breakdown part's per-probe value (None where the probe did not report it).
PART_COLUMNS: dict[str, ColumnElement[float]] = {
    "queue": P.server_queue,  # type: ignore[dict-item]
    "prefill": timing("server_prefill"),
    "decode": timing("server_decode"),
    "network": P.network,  # type: ignore[dict-item]
}
#: The parts that make up the server's view of a request.
SERVER_PARTS = brk.SERVER_PARTS
LATENCY_COLUMNS = {"ttft": P.ttft, "e2e": P.e2e}
SPAN_COLUMNS = (S.trace_id, S.span_id, S.name, S.start_time, S.end_time, S.queue, S.ttft, S.prefill, S.decode,
                S.error_type)  # fmt: skip


def pooled_itl(request_class: str, histograms: list[dict[str, int] | None]) -> LatencyStats:
    """ITL P50/P95/P99 over every per-token sample of the probes (their stored histograms
    pooled, :mod:`monitor.probes.gaps`); ``count`` is the number of samples."""
    pooled = gaps.merge(histograms)
    q = (gaps.quantile(pooled, p) for p in (0.5, 0.95, 0.99))
    return LatencyStats(request_class, "itl", gaps.count(pooled), *q)


def percentiles(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """P50, P95 and P99 of ``values``; all None when there are none."""
    if not values:
        return None, None, None
    p50, p95, p99 = (float(v) for v in np.percentile(np.asarray(values, dtype=float), [50, 95, 99]))
    return p50, p95, p99


@dataclass(frozen=True)
class SpanView:
    """What a probe's trace says of its first request: the server parts of its answering span
    (:func:`~monitor.traces.stages.trace_stages`; None: only a GenAI span's TTFT), that span's TTFT
    and the gateway's retry time before it."""

    parts: dict[str, float | None]
    ttft: float | None
    retry: float = 0.0


def _sample(row: Any, spans: dict[str, SpanView]) -> Sample:
    """One probe's parts from its row (class, start, trace, TTFT, tool rounds, e2e, client retry
    seconds, part columns...)."""
    cls, at, trace_id, ttft, rounds, e2e, retry = row[:7]
    part: dict[str, Any] = dict(zip(PART_COLUMNS, row[7:], strict=True))
    view = SOURCE_METRICS if any(part[p] is not None for p in SERVER_PARTS) else None
    span = spans.get(trace_id) if trace_id is not None and view is None else None
    if retry is not None:
        part["retry"] = float(retry)
    if span is not None:
        part.update(span.parts)
        before = (retry or 0.0) + span.retry  # the client's retries, then the gateway's
        part["network"] = ttft - before - span.ttft if ttft is not None and span.ttft is not None else None
        if span.retry:
            part["retry"] = before
        view = SOURCE_SPANS
    found = {k: float(v) for k, v in part.items() if v is not None}
    if isinstance(rounds, list) and rounds:
        found["tool_turnaround"] = float(sum(rounds))
    return Sample(
        str(cls),
        float(at),
        found,
        view,
        None if ttft is None else float(ttft),
        None if e2e is None else float(e2e),
        gateway_retry=span is not None and span.retry > 0,
    )


#: When a stored run's outcome was known: the stored completion (the SLI events' instant), else, for
#: rows written before it was stored, start + e2e (:attr:`ProbeResult.completed_at`'s fallback).
COMPLETION: ColumnElement[float] = func.coalesce(
    P.extra[COMPLETED_AT].as_float(), P.started_at + func.coalesce(P.e2e, 0.0)
)


def outside_maintenance(model: Model, start: float, end: float) -> list[ColumnElement[bool]]:
    """Filters leaving out the runs the SLIs leave out: completed inside a maintenance occurrence
    of a window covering their class and endpoint (:meth:`Maintenance.excluding`'s rule)."""
    out, done = [], COMPLETION
    for o in model.maintenance.occurrences(start - max_timeout(model), end):
        for klass, endpoint in sorted(model.maintenance.window(o.window).targets):
            inside = and_(P.request_class == klass, P.endpoint == endpoint, done > o.start, done <= o.end)
            out.append(not_(inside))
    return out


def max_timeout(model: Model) -> float:
    return max((c.probe.timeout for c in model.classes), default=0.0)


class ProbeFacts:
    """The probe results of every configured class in ``(week.start, end]`` (``end``: ``as_of``, a
    Unix time, or the week's end)."""

    def __init__(
        self,
        model: Model,
        session: Session,
        week: Period,
        red: Redactor,
        as_of: float | None = None,
        diagnostic: bool = False,
    ) -> None:
        """``diagnostic``: read the runs that are no SLI events too (confirmation rounds): the
        bottleneck verdict's evidence does, the report's figures do not."""
        self.model = model
        self.classes = [c.name for c in model.classes]
        self.session = session
        self.red = red
        self.start = week.start.timestamp()
        self.end = as_of if as_of is not None else week.end.timestamp()
        timeouts = {c.name: c.probe.timeout for c in model.classes}
        known = P.started_at + func.coalesce(P.e2e, case(timeouts, value=P.request_class, else_=0.0))
        self.in_week = (P.started_at > self.start, P.started_at <= self.end, known <= self.end,
                        *outside_maintenance(model, self.start, self.end),
                        *(() if diagnostic else (SLI_RUN,)))  # fmt: skip
        # answered as docs/slo-events.md defines it: neither unanswered nor the monitor's own fault
        self.answered = or_(P.reason.is_(None), P.reason.not_in(sorted((*UNANSWERED, *MONITOR))))
        self._samples: list[Sample] | None = None
        self._tail: tuple[TailShare, ...] | None = None
        self._latency: tuple[LatencyStats, ...] | None = None
        self._pools: brk.PoolHistograms | None = None

    def latency(self) -> tuple[LatencyStats, ...]:
        """P50/P95/P99 per class and latency, computed once: the latency table prints them and the
        tail's bands start at them (:meth:`tail`)."""
        if self._latency is None:
            self._latency = self._read_latency()
        return self._latency

    def _read_latency(self) -> tuple[LatencyStats, ...]:
        per_probe = [k for k in LATENCY_KINDS if k in LATENCY_COLUMNS]
        q = select(P.request_class, P.itl_histogram, *(LATENCY_COLUMNS[k] for k in per_probe))
        values: dict[tuple[str, str], list[float]] = defaultdict(list)
        itl: dict[str, list[dict[str, int] | None]] = defaultdict(list)
        for row in self.session.execute(q.where(*self.in_week, self.answered)):
            itl[row[0]].append(row[1])
            for kind, v in zip(per_probe, row[2:], strict=True):
                if v is not None:
                    values[(row[0], kind)].append(float(v))
        out = []
        for c in self.classes:
            for kind in LATENCY_KINDS:
                if kind == "itl":
                    out.append(pooled_itl(c, itl.get(c, [])))
                    continue
                vs = values.get((c, kind), [])
                out.append(LatencyStats(c, kind, len(vs), *percentiles(vs)))
        return tuple(out)

    def _span_views(self) -> dict[str, SpanView]:
        """The trace view of each week probe lacking a server view: the stages of the trace's first
        answered request (:mod:`monitor.traces.stages`), else the earliest span's TTFT alone (a
        GenAI span's first chunk: SGLang, a gateway)."""
        lacking = select(P.trace_id).where(
            *self.in_week,
            self.answered,
            P.trace_id.is_not(None),
            *(PART_COLUMNS[p].is_(None) for p in SERVER_PARTS),
        )
        q = select(*SPAN_COLUMNS).where(S.trace_id.in_(lacking), S.end_time <= self.end)
        traces: dict[str, list[ServerSpan]] = defaultdict(list)
        for r in self.session.execute(q.order_by(S.start_time, S.span_id)):
            traces[r[0]].append(ServerSpan(*r[:5], queue=r[5], ttft=r[6], prefill=r[7], decode=r[8],
                                           error_type=r[9]))  # fmt: skip
        views: dict[str, SpanView] = {}
        for trace_id, spans in traces.items():
            st = trace_stages(spans)
            if st is not None:
                parts = {p: st.stage(p) for p in (*SERVER_PARTS, "tokenization")}
                views[trace_id] = SpanView(parts, st.answer.ttft, st.stage("retry") or 0.0)
            elif (first := next((s for s in spans if s.ttft is not None), None)) is not None:
                views[trace_id] = SpanView({}, first.ttft)
        return views

    def samples(self) -> list[Sample]:
        """Every answered probe's breakdown parts (own server view, else its span's), oldest first."""
        if self._samples is not None:
            return self._samples
        spans = self._span_views()
        tools = P.extra[("timings", "tool_turnaround")].as_json()
        q = select(P.request_class, P.started_at, P.trace_id, P.ttft, tools, P.e2e, timing("retry_seconds"),
                   *PART_COLUMNS.values())  # fmt: skip
        rows = self.session.execute(q.where(*self.in_week, self.answered).order_by(P.started_at, P.id))
        out = [_sample(row, spans) for row in rows]
        self._samples = out
        return out

    def _pool_histograms(self) -> brk.PoolHistograms:
        if self._pools is None:
            samples, model = self.samples(), self.model
            lacking = [c for c in model.classes if brk.needs_pool(samples, c.name)]
            names = sorted({e.name for c in lacking for e in model.endpoints_for(c.name)})
            self._pools = brk.PoolHistograms(self.session, names, self.start, self.end)
        return self._pools

    def breakdown(self) -> tuple[Breakdown, ...]:
        return brk.breakdowns(self.model, self.samples(), self._pool_histograms())

    def tail(self) -> tuple[TailShare, ...]:
        if self._tail is None:
            bands = {"p50": "p50", "p95": "p95", "p99": "p99"}
            edges = {(s.request_class, s.kind, band): v for s in self.latency() if s.kind in ("ttft", "e2e")
                     for band, attr in bands.items() if (v := getattr(s, attr)) is not None}  # fmt: skip
            self._tail = attribute(self.model, self.samples(), edges=edges)
        return self._tail

    def bottleneck(self) -> tuple[Verdict, ...]:
        """Each class's bottleneck verdict over the period (:mod:`monitor.report.collect_bottleneck`)."""
        span = self.end - self.start
        return collect_bottleneck.verdicts(
            self.model, self.session, self.end, span, span, self.samples(), span
        )

    def breakdown_series(self, points: list[float], tz: object) -> tuple[BreakdownSeries, ...]:
        return brk.breakdown_series(self.model, self.samples(), self._pool_histograms(), points, tz)

    def failures(self) -> tuple[ProbeFailure, ...]:
        """Failed probes per class and category, most frequent first, with the latest detail."""
        failed = (*self.in_week, P.ok.is_(False), P.reason.is_not(None))
        q = (
            select(P.request_class, P.reason, func.count(P.id))
            .where(*failed)
            .group_by(P.request_class, P.reason)
        )
        groups = sorted(self.session.execute(q), key=lambda r: (-r[2], r[0], r[1]))
        out = []
        for cls, reason, n in groups:
            latest = select(P.detail).where(*failed, P.request_class == cls, P.reason == reason)
            detail = self.session.scalar(latest.order_by(P.started_at.desc()).limit(1))
            out.append(ProbeFailure(self.red.text(cls), self.red.text(reason), int(n), self.red.text(detail)))
        return tuple(out)
