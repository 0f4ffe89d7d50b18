"""Where real traffic's tail goes: the stage shares of the period's real requests per class.

Real traffic is every trace of stored server spans (``server_spans``) in no probe's trace whose
spans ended in the period, one request per trace (:mod:`monitor.bottleneck.traffic`: its stages
from :mod:`monitor.traces.stages`, its class by the goodput of real traffic's rule). The shares
are :func:`monitor.bottleneck.tail.attribute` of those samples — the probes' definition, on a
server-side population. Classes without a single real request are left out (nothing to say).
A week with more than :data:`MAX_TRACES` traces is attributed on a uniform sample of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.bottleneck.tail import TRAFFIC, Sample, TailShare, attribute
from monitor.bottleneck.traffic import by_trace, traffic_samples
from monitor.model import Model
from monitor.slo.span_goodput import SpanJudge
from monitor.store.queries import real_traffic
from monitor.store.tables import ServerSpanRow
from monitor.traces.span import ServerSpan

S = ServerSpanRow
COLUMNS = (S.trace_id, S.span_id, S.name, S.start_time, S.end_time, S.queue, S.ttft, S.prefill, S.decode,
           S.e2e, S.prompt_tokens, S.completion_tokens, S.service_name, S.error_type, S.tenant)  # fmt: skip


#: At most this many traces are read (a week of real traffic may hold millions): those with the
#: smallest trace ids — random 128-bit ids, so a uniform sample, and the same one on every run.
MAX_TRACES = 50_000


def spans_in(
    session: Session, start: float, end: float, most: int | None = None, probes_since: float | None = None
) -> Iterator[ServerSpan]:
    """The spans of real traffic's traces in (start, end]: at most ``most`` traces (default
    :data:`MAX_TRACES`), the uniform sample of the smallest trace ids (``probes_since``:
    :func:`~monitor.store.queries.real_traffic`'s)."""
    inside = real_traffic(start, end, probes_since)
    limit = MAX_TRACES if most is None else most
    traces = select(S.trace_id).where(*inside).distinct().order_by(S.trace_id).limit(limit)
    q = select(*COLUMNS).where(*inside, S.trace_id.in_(traces))
    names = ("queue", "ttft", "prefill", "decode", "e2e", "prompt_tokens", "completion_tokens",
             "service_name", "error_type", "tenant_label")  # fmt: skip
    for row in session.execute(q.order_by(S.start_time, S.span_id)):
        r: tuple[Any, ...] = tuple(row)
        yield ServerSpan(r[0], r[1], r[2], r[3], r[4], **dict(zip(names, r[5:], strict=True)))


def samples_in(model: Model, session: Session, start: float, end: float) -> list[Sample]:
    """Real traffic's requests over ``(start, end]`` as samples of their class (module docstring)."""
    judge = SpanJudge(model)
    return traffic_samples(by_trace(spans_in(session, start, end)), lambda s: judge.request_class(s)[0])


def traffic_tail(model: Model, samples: Sequence[Sample]) -> tuple[TailShare, ...]:
    """Each class's real-traffic tail and typical shares (classes without a request left out)."""
    seen = {s.request_class for s in samples}
    return tuple(t for t in attribute(model, samples, TRAFFIC) if t.request_class in seen)
