"""The reader's summary: each request class in one line of plain words.

For a class: its status, its worst SLO (worst status first, then least budget left, then the
smallest margin over the objective), that SLO's attainment against its objective, the budget left in
its period, the incident that cost that SLO the largest share of its budget, and how its attainment
moved since the period before. The words are written by :func:`monitor.report.display.reader_line`.
"""

from __future__ import annotations

from collections.abc import Sequence

from monitor.report.data import STATUSES, ClassSummary, Incident, ReaderLine, SLOLine

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


def reader_lines(classes: Sequence[ClassSummary], incidents: Sequence[Incident]) -> tuple[ReaderLine, ...]:
    out = []
    for c in classes:
        s = _worst(c.slos)
        if s is None:
            out.append(ReaderLine(c.name, c.status, None, None, None, None, None, None, None, None))
            continue
        incident, share = _costliest(incidents, f"{c.name}/{s.slo}")
        line = ReaderLine(c.name, c.status, s.slo, s.attainment, s.objective, s.period_window,
                          s.budget_remaining, s.attainment_previous, incident, share)  # fmt: skip
        out.append(line)
    return tuple(out)
