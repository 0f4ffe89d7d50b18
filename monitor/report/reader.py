"""The reader's summary: each request class in one line of plain words.

For a class: its status, its worst SLO (worst status first, then least budget left, then the
smallest margin over the objective), that SLO's attainment against its objective, the budget left in
its period, the incident that cost that SLO the largest share of its budget, and how its attainment
moved since the period before; and every incident that cost the class budget, largest first (page
one names :data:`~monitor.report.data.PAGE_ONE_INCIDENTS` of them and counts the rest). The words
are written by :func:`monitor.report.display.reader_line` and :func:`~monitor.report.display.costly_line`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from monitor import conventions as cv
from monitor.report.data import (
    PAGE_ONE_INCIDENTS,
    STATUSES,
    ClassSummary,
    CostlyIncident,
    Exhaustion,
    Incident,
    ReaderLine,
    SLOLine,
)

_RANK = {s: i for i, s in enumerate(STATUSES)}


def _worst(slos: Sequence[SLOLine]) -> SLOLine | None:
    with_data = [s for s in slos if s.status != "no_data"]
    if not with_data:
        return None

    def key(s: SLOLine) -> tuple[int, float, float]:
        budget = s.budget_remaining if s.budget_remaining is not None else float("inf")
        margin = (s.attainment or 0.0) - s.objective
        return _RANK[s.status], budget, margin

    return min(with_data, key=key)


def _costliest(incidents: Sequence[Incident], slo_id: str) -> tuple[Incident | None, float | None]:
    best: tuple[Incident | None, float | None] = (None, None)
    for incident in incidents:
        for cost in incident.costs:
            if cost.slo_id == slo_id and cost.share is not None and cost.share > (best[1] or 0.0):
                best = (incident, cost.share)
    return best


def costly(incidents: Sequence[Incident], request_class: str) -> tuple[CostlyIncident, ...]:
    """The incidents that cost an SLO of ``request_class`` budget (a share above 0), largest share
    first, then the earliest."""
    prefix = f"{request_class}/"
    out = []
    for incident in incidents:
        costs = tuple((c.slo_id.removeprefix(prefix), c.share) for c in incident.costs
                      if c.slo_id.startswith(prefix) and c.share is not None and c.share > 0)  # fmt: skip
        if costs:
            out.append(CostlyIncident(incident, costs))
    return tuple(sorted(out, key=lambda c: (-c.share, c.incident.started_at)))


def exhaustions(
    incidents: Sequence[Incident], request_class: str, start: datetime, end: datetime
) -> tuple[Exhaustion, ...]:
    """Per SLO of ``request_class``, how long its budget was exhausted within ``(start, end]``
    (the exhaustion incidents, each clipped to the period), longest first."""
    found: dict[str, list[Incident]] = {}
    for i in incidents:
        if i.alertname == cv.ALERT_BUDGET_EXHAUSTED and i.request_class == request_class and i.slo:
            found.setdefault(i.slo, []).append(i)
    out = []
    for slo, rows in found.items():
        spans = [(max(i.started_at, start), min(i.ended_at or end, end)) for i in rows]
        seconds = sum(max(0.0, (b - a).total_seconds()) for a, b in spans)
        out.append(Exhaustion(slo, seconds, min(a for a, _ in spans), any(i.ended_at is None for i in rows)))
    return tuple(sorted(out, key=lambda e: (-e.seconds, e.slo)))


def reader_lines(
    classes: Sequence[ClassSummary],
    incidents: Sequence[Incident],
    start: datetime,
    end: datetime,
    previous_label: str = "last week",
) -> tuple[ReaderLine, ...]:
    out = []
    for c in classes:
        s = _worst(c.every_slo)
        if s is None:
            out.append(ReaderLine(c.name, c.status, None, None, None, None, None, None, None, None))
            continue
        incident, share = _costliest(incidents, f"{c.name}/{s.slo}")
        paid = costly(incidents, c.name)
        line = ReaderLine(c.name, c.status, s.slo, s.attainment, s.objective, s.period_window,
                          s.budget_remaining, s.attainment_previous, incident, share,
                          s.budget_remaining_previous, paid[:PAGE_ONE_INCIDENTS],
                          max(0, len(paid) - PAGE_ONE_INCIDENTS),
                          exhaustions(incidents, c.name, start, end), previous_label)  # fmt: skip
        out.append(line)
    return tuple(out)
