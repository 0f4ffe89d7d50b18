"""The week's bottleneck verdict per class: the same rules as the service's (monitor.bottleneck.rules),
read from the store over the report's period.

Evidence here is the period's: the tail attribution of the week's answered probes (the report's own
``tail``, spans joined), the probe runs and how many were retried, the preemptions of the
class's endpoints and their prefix-cache hit rate against the period before, how much their queue
grew (the stored intervals' ``waiting``: the later half's mean against the earlier half's), and the
mean SM and tensor activity of their stored GPU samples (``gpu_samples``; none without a
``gpu_exporter``, and then a queue-dominated tail reads ``queue_bound``). KV residency is not
stored (the service reads it live), so eviction before reuse is not evidence here
(docs/bottleneck.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from monitor.bottleneck.evidence import Evidence, queue_growth
from monitor.bottleneck.live import TOOL_KINDS
from monitor.bottleneck.rules import Verdict, decide
from monitor.bottleneck.tail import TailShare
from monitor.model import Model
from monitor.store.tables import GpuSampleRow, ProbeResultRow, ScrapeIntervalRow

P, SI, G = ProbeResultRow, ScrapeIntervalRow, GpuSampleRow


def timing(name: str) -> ColumnElement[float]:
    """SQL for one of a probe's ``timings`` (seconds; None where the probe did not report it)."""
    column: ColumnElement[float] = P.extra[("timings", name)].as_float()
    return column


def _runs(session: Session, cls: str, in_week: Sequence[ColumnElement[bool]]) -> tuple[int, int]:
    """(probe runs, runs with time spent before their final attempt) of ``cls`` in the period."""
    retried = func.sum(case((timing("retry_seconds") > 0, 1), else_=0))
    q = select(func.count(), retried).where(*in_week, P.request_class == cls)
    row: Any = session.execute(q).one()
    return int(row[0] or 0), int(row[1] or 0)


def _pool(
    session: Session, endpoints: list[str], start: float, end: float
) -> tuple[float | None, float | None]:
    """(preemptions, request-weighted prefix-cache hit rate) of ``endpoints`` over (start, end]."""
    if not endpoints:
        return None, None
    inside = (SI.endpoint.in_(endpoints), SI.end > start, SI.end <= end)
    q = select(
        func.sum(SI.preemptions),
        func.sum(SI.prefix_cache_hit_rate * SI.requests),
        func.sum(case((SI.prefix_cache_hit_rate.is_not(None), SI.requests), else_=0.0)),
    ).where(*inside)
    found: Any = session.execute(q).one()
    preempted, hits, weight = found
    rate = float(hits) / float(weight) if hits is not None and weight else None
    return (None if preempted is None else float(preempted)), rate


def _queue_growth(session: Session, endpoints: list[str], start: float, end: float) -> float | None:
    """How much the waiting queue of ``endpoints`` grew over (start, end] (evidence.queue_growth)."""
    if not endpoints:
        return None
    q = select(SI.end, SI.waiting).where(
        SI.endpoint.in_(endpoints), SI.end > start, SI.end <= end, SI.waiting.is_not(None)
    )
    return queue_growth([(float(t), float(w)) for t, w in session.execute(q) if w is not None])


def _gpu(
    session: Session, endpoints: list[str], start: float, end: float
) -> tuple[float | None, float | None]:
    """(mean SM activity, mean tensor activity) of the GPU samples of ``endpoints`` in (start, end]."""
    if not endpoints:
        return None, None
    q = select(func.avg(G.sm_active), func.avg(G.tensor_active))
    found: Any = session.execute(q.where(G.endpoint.in_(endpoints), G.time > start, G.time <= end)).one()
    sm, tensor = found
    return (None if sm is None else float(sm)), (None if tensor is None else float(tensor))


def verdicts(
    model: Model,
    session: Session,
    start: float,
    end: float,
    tail: Sequence[TailShare],
    in_week: Sequence[ColumnElement[bool]],
) -> tuple[Verdict, ...]:
    """Each class's verdict over the period (start, end]."""
    out = []
    for rc in model.classes:
        names = [e.name for e in model.endpoints_for(rc.name)]
        runs, retried = _runs(session, rc.name, in_week)
        preempted, hit_rate = _pool(session, names, start, end)
        _, before = _pool(session, names, start - (end - start), start)
        sm_active, tensor_active = _gpu(session, names, start, end)
        evidence = Evidence(
            request_class=rc.name,
            end=end,
            window=end - start,
            tail=tuple(s for s in tail if s.request_class == rc.name),
            runs=runs,
            retried=retried,
            tools=bool(TOOL_KINDS & set(rc.probe.kinds)),
            preemptions=preempted,
            prefix_hit_rate=hit_rate,
            prefix_hit_before=before,
            sm_active=sm_active,
            tensor_active=tensor_active,
            queue_growth=_queue_growth(session, names, start, end),
        )
        out.append(decide(evidence))
    return tuple(out)
