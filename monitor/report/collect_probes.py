"""Probe facts for the report: latency percentiles, the latency breakdown, failures by category.

Read from ``probe_results`` for probes started in ``(week.start, week.end]`` (the window a probe's
event slice falls in). Latency only counts probes the service answered (not an availability
failure), as the SLO slices do:

* TTFT and end-to-end: one value per probe; ITL: the probe's mean inter-token latency;
* percentiles are linear interpolations between order statistics (numpy's default);
* breakdown parts are means over the probes that reported the part (server queue, prefill and
  decode from the server's per-request view, network = client TTFT − server TTFT, tool
  turnaround = the sum of a probe's tool rounds). A probe that recorded no server view (no
  queue, prefill or decode) takes it from the vLLM ``llm_request`` span of its trace when one
  was received (``server_spans``; the trace's earliest span, i.e. the probe's first request),
  with network = client TTFT − the span's TTFT.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import Session

from monitor.events import MONITOR, UNANSWERED
from monitor.model import Model
from monitor.report.data import BREAKDOWN_PARTS, LATENCY_KINDS, Breakdown, LatencyStats, Period, ProbeFailure
from monitor.report.redact import Redactor
from monitor.store.tables import ProbeResultRow, ServerSpanRow

P = ProbeResultRow
S = ServerSpanRow


def _timing(name: str) -> ColumnElement[float]:
    column: ColumnElement[float] = P.extra[("timings", name)].as_float()
    return column


#: SQL for each breakdown part's per-probe value (None where the probe did not report it).
PART_COLUMNS: dict[str, ColumnElement[float]] = {
    "queue": P.server_queue,  # type: ignore[dict-item]
    "prefill": _timing("server_prefill"),
    "decode": _timing("server_decode"),
    "network": P.network,  # type: ignore[dict-item]
}
#: The parts that make up the server's view of a request.
SERVER_PARTS = ("queue", "prefill", "decode")
LATENCY_COLUMNS = {"ttft": P.ttft, "itl": P.itl_mean, "e2e": P.e2e}


def percentiles(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """P50, P95 and P99 of ``values``; all None when there are none."""
    if not values:
        return None, None, None
    p50, p95, p99 = (float(v) for v in np.percentile(np.asarray(values, dtype=float), [50, 95, 99]))
    return p50, p95, p99


class ProbeFacts:
    """The week's probe results of every configured class."""

    def __init__(self, model: Model, session: Session, week: Period, red: Redactor) -> None:
        self.classes = [c.name for c in model.classes]
        self.session = session
        self.red = red
        self.in_week = (P.started_at > week.start.timestamp(), P.started_at <= week.end.timestamp())
        # answered as docs/slo-events.md defines it: neither unanswered nor the monitor's own fault
        self.answered = or_(P.reason.is_(None), P.reason.not_in(sorted((*UNANSWERED, *MONITOR))))

    def latency(self) -> tuple[LatencyStats, ...]:
        cols = [LATENCY_COLUMNS[k] for k in LATENCY_KINDS]
        q = select(P.request_class, *cols).where(*self.in_week, self.answered)
        values: dict[tuple[str, str], list[float]] = defaultdict(list)
        for row in self.session.execute(q):
            for kind, v in zip(LATENCY_KINDS, row[1:], strict=True):
                if v is not None:
                    values[(row[0], kind)].append(float(v))
        out = []
        for c in self.classes:
            for kind in LATENCY_KINDS:
                vs = values.get((c, kind), [])
                out.append(LatencyStats(c, kind, len(vs), *percentiles(vs)))
        return tuple(out)

    def _tool_turnaround(self) -> dict[str, float | None]:
        q = select(P.request_class, P.extra[("timings", "tool_turnaround")].as_json())
        sums: dict[str, list[float]] = defaultdict(list)
        for cls, rounds in self.session.execute(q.where(*self.in_week, self.answered)):
            if isinstance(rounds, list) and rounds:
                sums[str(cls)].append(float(sum(rounds)))
        return {c: (sum(v) / len(v)) for c, v in sums.items()}

    def _span_views(self) -> dict[str, tuple[float | None, ...]]:
        """(queue, prefill, decode, ttft) of the earliest span of each week probe lacking a server view."""
        lacking = select(P.trace_id).where(
            *self.in_week,
            self.answered,
            P.trace_id.is_not(None),
            *(PART_COLUMNS[p].is_(None) for p in SERVER_PARTS),
        )
        q = select(S.trace_id, S.queue, S.prefill, S.decode, S.ttft).where(S.trace_id.in_(lacking))
        views: dict[str, tuple[float | None, ...]] = {}
        for trace_id, *view in self.session.execute(q.order_by(S.start_time, S.span_id)):
            views.setdefault(trace_id, tuple(view))
        return views

    def _part_means(self) -> tuple[dict[str, int], dict[tuple[str, str], float]]:
        """Probes per class and the mean of each breakdown part per (class, part)."""
        spans = self._span_views()
        q = select(P.request_class, P.trace_id, P.ttft, *PART_COLUMNS.values()).where(
            *self.in_week, self.answered
        )
        counts: dict[str, int] = defaultdict(int)
        values: dict[tuple[str, str], list[float]] = defaultdict(list)
        for cls, trace_id, ttft, *parts in self.session.execute(q):
            counts[cls] += 1
            part = dict(zip(PART_COLUMNS, parts, strict=True))
            view = spans.get(trace_id) if trace_id is not None else None
            if view is not None and all(part[p] is None for p in SERVER_PARTS):
                part.update(zip(SERVER_PARTS, view[:3], strict=True))
                part["network"] = ttft - view[3] if ttft is not None and view[3] is not None else None
            for name, v in part.items():
                if v is not None:
                    values[(cls, name)].append(float(v))
        return counts, {k: sum(v) / len(v) for k, v in values.items()}

    def breakdown(self) -> tuple[Breakdown, ...]:
        counts, means = self._part_means()
        tools = self._tool_turnaround()
        out = []
        for c in self.classes:
            found = {**{p: means.get((c, p)) for p in PART_COLUMNS}, "tool_turnaround": tools.get(c)}
            parts = tuple((p, found.get(p)) for p in BREAKDOWN_PARTS)
            out.append(Breakdown(c, counts.get(c, 0), parts))
        return tuple(out)

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
