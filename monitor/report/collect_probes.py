"""Probe facts for the report: latency percentiles, the latency breakdown, failures by category.

Read from ``probe_results`` for probes started in ``(week.start, week.end]`` (the window a probe's
event slice falls in). Latency only counts probes the service answered (not an availability
failure), as the SLO slices do:

* TTFT and end-to-end: one value per probe; ITL: the probe's mean inter-token latency;
* percentiles are linear interpolations between order statistics (numpy's default);
* breakdown parts are means over the probes that reported the part (server queue, prefill and
  decode from the server's per-request view, network = client TTFT − server TTFT, tool
  turnaround = the sum of a probe's tool rounds).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import Session

from monitor.conventions import AVAILABILITY_FAILURES
from monitor.model import Model
from monitor.report.data import BREAKDOWN_PARTS, LATENCY_KINDS, Breakdown, LatencyStats, Period, ProbeFailure
from monitor.report.redact import Redactor
from monitor.store.tables import ProbeResultRow

P = ProbeResultRow


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
        self.answered = or_(P.reason.is_(None), P.reason.not_in(sorted(AVAILABILITY_FAILURES)))

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

    def breakdown(self) -> tuple[Breakdown, ...]:
        aggs = [func.avg(col) for col in PART_COLUMNS.values()]
        q = select(P.request_class, func.count(P.id), *aggs).where(*self.in_week, self.answered)
        rows = {r[0]: r for r in self.session.execute(q.group_by(P.request_class))}
        tools = self._tool_turnaround()
        out = []
        for c in self.classes:
            row = rows.get(c)
            means = dict(zip(PART_COLUMNS, row[2:], strict=True)) if row is not None else {}
            means["tool_turnaround"] = tools.get(c)
            parts = tuple((p, None if means.get(p) is None else float(means[p])) for p in BREAKDOWN_PARTS)
            out.append(Breakdown(c, int(row[1]) if row is not None else 0, parts))
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
