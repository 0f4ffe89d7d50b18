"""The requests behind an SLO at a time: the failed and slowest of its window, each with its trace
id and where its time went (``m3mon traces``; docs/traces.md, "From an alert to its requests").

An SLO's requests are its own events (:mod:`monitor.events`, the one definition):

* **probe-sourced** SLOs: the class's probe runs that completed in the window and are events of the
  SLO (a run of the monitor's own fault is none; a latency SLI counts answered runs only). A run is
  bad as the store counts it: unanswered (availability), a wrong answer (correctness), its SLI value
  above the threshold (latency; ITL: any token in a bucket wholly above it), or, for goodput, any
  of those for any latency SLO of the class. Its stages are its own server view (queue, prefill,
  decode, network, retries, tool turnaround), else the vLLM span of its trace.
* **traffic** goodput SLOs: the real requests (no probe's trace) of the class, bad as the live SLO
  judges them (:meth:`SpanJudge.is_good`; a failed span is bad); a tenant's SLO lists the requests
  stored with its tenant label (the label the live SLO counted them under; spans stored before
  labels were kept have none and are listed for no tenant); a priority band's SLO lists the
  requests of every band (the store keeps no priority);
* **server-sourced** SLOs: every request the class's pools served in the window, from the spans
  received over OTLP (probes' and real traffic's alike, as the server's histograms count both),
  routed to a class as the report's goodput routes them (:class:`SpanJudge`); bad when the span's
  SLI value is above the threshold, or (availability) when the request failed.

Bad requests come first, then the largest SLI value; ``limit`` of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor import events
from monitor.model import SLO, Model
from monitor.probes import gaps
from monitor.report.collect_bottleneck import timing
from monitor.report.collect_probes import COMPLETION
from monitor.report.collect_traffic import COLUMNS as TRAFFIC_COLUMNS
from monitor.slo.span_goodput import SpanJudge, span_failure
from monitor.store.queries import SLI_RUN
from monitor.store.tables import ProbeResultRow, ServerSpanRow
from monitor.traces.span import ServerSpan
from monitor.traces.stages import TRACE_STAGES, trace_stages

P = ProbeResultRow
S = ServerSpanRow
ORIGIN_PROBE, ORIGIN_SPAN = "probe", "span"
#: The order a request's stages are shown in: the trace's, with the agent's tool rounds before "other".
STAGE_ORDER = (*TRACE_STAGES[:-1], "tool_turnaround", TRACE_STAGES[-1])
SPAN_COLUMNS = (*TRAFFIC_COLUMNS, S.finish_reason)
_SPAN_FIELDS = ("queue", "ttft", "prefill", "decode", "e2e", "prompt_tokens", "completion_tokens",
                "service_name", "error_type", "tenant_label", "finish_reason")  # fmt: skip
#: Probe columns of each stage (seconds; None where the run did not report it).
_PROBE_STAGES = {
    "retry": timing("retry_seconds"),
    "network": P.network,
    "queue": P.server_queue,
    "prefill": timing("server_prefill"),
    "decode": timing("server_decode"),
    "tool_turnaround": P.extra[("timings", "tool_turnaround")].as_float(),
}
#: At most this many spans are read per window for a server-sourced SLO (slowest first).
MAX_SPANS = 5000


@dataclass(frozen=True)
class Request:
    """One request behind an SLO: when, where, its trace, whether it was a bad event, its stages."""

    at: float
    request_class: str
    endpoint: str | None
    origin: str  # ORIGIN_PROBE or ORIGIN_SPAN
    kind: str | None  # the probe kind, or the span's name
    trace_id: str | None
    outcome: str  # "ok", a probe failure category, or a span's error type
    value: float | None  # the SLI's value for this request (seconds), None for outcome SLIs
    bad: bool
    stages: dict[str, float] = field(default_factory=dict)

    def as_json(self, link: str | None) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("at", "request_class", "endpoint", "origin", "kind", "trace_id")}
        out.update(outcome=self.outcome, value=self.value, bad=self.bad, stages=self.stages, trace_url=link)
        return out


def requests_behind(
    model: Model, session: Session, slo: SLO, end: float, window: float, limit: int = 10
) -> tuple[Request, ...]:
    """The failed and slowest requests of ``slo`` in ``(end - window, end]`` (module docstring)."""
    if slo.source == "probes":
        found = _probe_requests(model, session, slo, end - window, end)
    else:
        found = _span_requests(model, session, slo, end - window, end)
    ranked = sorted(found, key=lambda r: (not r.bad, -(r.value if r.value is not None else -math.inf), r.at))
    return tuple(ranked[:limit])


def _probe_value(slo: SLO, row: Any) -> tuple[float | None, bool]:
    """(the run's SLI value, whether it is above ``slo``'s threshold) from its stored columns."""
    assert slo.threshold is not None
    if slo.sli == "itl":
        hist: dict[str, int] = row.itl_histogram or {}
        above = sum(n for key, n in hist.items() if _lower_edge(key) >= slo.threshold)
        return row.itl_mean, above > 0
    extra: dict[str, Any] = row.extra or {}
    stall = (extra.get("timings") or {}).get("stall") or {}
    value = {
        "ttft": row.ttft,
        "tpot": row.tpot,
        "e2e": row.e2e,
        "queue_time": row.server_queue,
        "stall": stall.get("seconds"),
        "ttft_cold": extra.get("cold_ttft"),
        "ttft_warm": extra.get("warm_ttft"),
    }.get(slo.sli)
    if value is None:
        return None, False
    value = max(float(value), 0.0)  # negative clock artefacts count as 0, as the store counts them
    bad, _ = events.HistogramEvents("", slo.threshold, per_pool=False).counts((value,))
    return value, bad > 0


def _lower_edge(key: str) -> float:
    i = gaps.ITL_EDGES.index(math.inf if key == "+Inf" else float(key))
    return gaps.ITL_EDGES[i - 1] if i > 0 else 0.0


def _probe_bad(model: Model, slo: SLO, row: Any) -> tuple[bool, float | None] | None:
    """(bad, value) of one stored run for ``slo``; None when the run is no event of it."""
    rule = events.definition(slo)
    labels = events.probe_labels(row.reason)
    if isinstance(rule, events.CounterEvents) and rule is not events.PROBE_GOODPUT:
        return (rule.is_bad(labels), None) if rule.is_valid(labels) else None
    if rule is events.PROBE_GOODPUT:
        if not events.PROBE_AVAILABILITY.is_valid(labels):
            return None
        if not events.probe_answered(row.reason) or events.PROBE_CORRECTNESS.is_bad(labels):
            return True, None
        latency = [
            s for s in model.request_class(slo.request_class).slos if s.threshold and s.source == "probes"
        ]
        return any(_probe_value(s, row)[1] for s in latency), row.e2e
    if not events.probe_answered(row.reason):
        return None
    value, bad = _probe_value(slo, row)
    return (bad, value) if value is not None else None


def _probe_requests(model: Model, session: Session, slo: SLO, start: float, end: float) -> list[Request]:
    stages = [c.label(f"stage_{k}") for k, c in _PROBE_STAGES.items()]
    inside = (P.request_class == slo.request_class, start < COMPLETION, end >= COMPLETION, SLI_RUN)
    rows = [tuple(r) for r in session.execute(select(P, *stages).where(*inside))]
    traced = [t for r in rows if (t := cast(ProbeResultRow, r[0]).trace_id)]
    spans = _spans_of(session, traced)
    out = []
    for result in rows:
        row, parts = cast(ProbeResultRow, result[0]), cast(tuple[float | None, ...], result[1:])
        judged = _probe_bad(model, slo, row)
        if judged is None:
            continue
        own = {k: float(v) for k, v in zip(_PROBE_STAGES, parts, strict=True) if v is not None}
        if not {"queue", "prefill", "decode"} & own.keys() and row.trace_id in spans:
            own.update(_trace_parts(spans[row.trace_id]))
        outcome = row.reason or "ok"
        out.append(Request(row.started_at, row.request_class, row.endpoint, ORIGIN_PROBE, row.kind,
                           row.trace_id, outcome, judged[1], judged[0], own))  # fmt: skip
    return out


def _spans_of(session: Session, trace_ids: Sequence[str]) -> dict[str, list[ServerSpan]]:
    out: dict[str, list[ServerSpan]] = {}
    for i in range(0, len(trace_ids), 500):
        q = select(*SPAN_COLUMNS).where(S.trace_id.in_(trace_ids[i : i + 500]))
        for row in session.execute(q.order_by(S.start_time, S.span_id)):
            span = _span(tuple(row))
            out.setdefault(span.trace_id, []).append(span)
    return out


def _span(r: tuple[Any, ...]) -> ServerSpan:
    return ServerSpan(r[0], r[1], r[2], r[3], r[4], **dict(zip(_SPAN_FIELDS, r[5:], strict=True)))


def _trace_parts(spans: Sequence[ServerSpan]) -> dict[str, float]:
    st = trace_stages(spans)
    if st is None:
        return {}
    return {name: value for name, value in st.stages if value is not None}


#: A span's value of each server latency SLI.
_SPAN_VALUE = {"ttft": "ttft", "e2e": "e2e", "queue_time": "queue"}


def _span_requests(model: Model, session: Session, slo: SLO, start: float, end: float) -> list[Request]:
    column = getattr(S, _SPAN_VALUE.get(slo.sli, "e2e"))
    q = select(S.trace_id).where(S.end_time > start, S.end_time <= end)
    if slo.sli == "availability":
        q = q.order_by(S.error_type.is_(None), column.desc().nulls_last())
    else:
        q = q.order_by(column.desc().nulls_last())
    ids = list(dict.fromkeys(session.scalars(q.limit(MAX_SPANS))))
    owners = select(P.trace_id, P.request_class, P.endpoint).where(P.trace_id.in_(ids))
    probes = {t: (c, e) for t, c, e in session.execute(owners) if t is not None}
    judge, out = SpanJudge(model), []
    for trace_id, spans in _spans_of(session, ids).items():
        request = _span_request(judge, slo, trace_id, spans, probes.get(trace_id))
        if request is not None:
            out.append(request)
    return out


def _span_request(
    judge: SpanJudge, slo: SLO, trace_id: str, spans: Sequence[ServerSpan], probe: tuple[str, str] | None
) -> Request | None:
    """One trace as a request of ``slo``'s class (a probe's trace: the probe's class), else None."""
    failed = next((s for s in spans if s.error_type), None)
    st = trace_stages(spans)
    answer = st.answer if st is not None else failed
    if answer is None or (probe[0] if probe else judge.request_class(answer)[0]) != slo.request_class:
        return None
    found = judge.endpoints.get(answer.service_name or "")
    endpoint = probe[1] if probe else found[0].name if found is not None else None
    parts = _trace_parts(spans)
    if slo.source == "traffic":
        if probe or (slo.tenant is not None and answer.tenant_label != slo.tenant):
            return None
        return _traffic_request(judge, slo, trace_id, answer, endpoint, parts)
    if slo.sli == "availability":
        outcome = failed.error_type if failed is not None and st is None else "ok"
        return Request(answer.start, slo.request_class, endpoint, ORIGIN_SPAN, answer.name, trace_id,
                       outcome or "error", None, st is None, parts)  # fmt: skip
    value = _span_sli(slo.sli, answer, st.e2e if st is not None else None)
    if value is None or slo.threshold is None:
        return None
    return Request(answer.start, slo.request_class, endpoint, ORIGIN_SPAN, answer.name, trace_id, "ok",
                   value, value > slo.threshold, parts)  # fmt: skip


def _traffic_request(
    judge: SpanJudge,
    slo: SLO,
    trace_id: str,
    answer: ServerSpan,
    endpoint: str | None,
    parts: dict[str, float],
) -> Request:
    """A real request of a ``source: traffic`` goodput SLO, judged as the live SLO judges it."""
    failure = span_failure(answer)
    bad = failure is not None or not judge.is_good(answer, slo.request_class)
    return Request(answer.start, slo.request_class, endpoint, ORIGIN_SPAN, answer.name, trace_id,
                   failure or "ok", answer.e2e, bad, parts)  # fmt: skip


def _span_sli(sli: str, span: ServerSpan, e2e: float | None) -> float | None:
    if sli == "e2e":
        return e2e
    if sli in ("tpot", "itl"):
        tokens = span.completion_tokens
        return span.decode / (tokens - 1) if span.decode is not None and tokens and tokens > 1 else None
    value: float | None = getattr(span, _SPAN_VALUE.get(sli, "e2e"))
    return value
