"""Real traffic as tail samples: each trace of server spans in no probe's trace, as one request.

A trace's stages come from :func:`monitor.traces.stages.trace_stages` (retries, the gateway's time
around the answer as network, tokenization, queue, prefill, decode, vLLM's time after the last
token as other). Its class comes from the answering span, by the rule the report's goodput of
real traffic uses (:class:`monitor.slo.span_goodput.SpanJudge`: the endpoint by ``service.name``,
then ``span_class``, its only class, or the tightest context ceiling the tokens fit).

The request's **e2e** is the trace's (its outermost span); its **TTFT** is the retries, the
network part and the answering span's own TTFT: a span has no first-token stamp at the gateway,
so a gateway's time after the answer counts in the TTFT's network share too (for a request that
reached vLLM directly, network and retries are 0 and TTFT is vLLM's own). There is no client:
the samples' TTFT and e2e are server-side, unlike a probe's. Its **tenant** is the label the
real-traffic SLOs counted its answering span under (stored with the span), else another of its
spans' label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from monitor.bottleneck.tail import SOURCE_SPANS, Sample
from monitor.traces.span import ServerSpan
from monitor.traces.stages import trace_stages

#: The trace stages a sample keeps (``other`` is what the shares leave over, recomputed there).
KEPT = ("retry", "network", "tokenization", "queue", "prefill", "decode")


def traffic_sample(
    spans: Sequence[ServerSpan], class_of: Callable[[ServerSpan], str | None]
) -> Sample | None:
    """One trace as a sample of its class (None: no answer in it, or its answer has no class)."""
    st = trace_stages(spans)
    if st is None or st.answer.ttft is None:
        return None
    cls = class_of(st.answer)
    if cls is None:
        return None
    parts = {name: value for name in KEPT if (value := st.stage(name)) is not None}
    ttft = (st.stage("retry") or 0.0) + (st.stage("network") or 0.0) + st.answer.ttft
    tenant = st.answer.tenant_label or next((s.tenant_label for s in spans if s.tenant_label), None)
    return Sample(
        cls, st.answer.start, parts, SOURCE_SPANS, ttft, st.e2e, gateway_retry=st.attempts > 1, tenant=tenant
    )


def traffic_samples(
    traces: Mapping[str, Sequence[ServerSpan]], class_of: Callable[[ServerSpan], str | None]
) -> list[Sample]:
    """Every trace with an answer and a class, as samples (oldest answer first)."""
    found = (traffic_sample(spans, class_of) for spans in traces.values())
    return sorted((s for s in found if s is not None), key=lambda s: s.at)


def by_trace(spans: Iterable[ServerSpan]) -> dict[str, list[ServerSpan]]:
    out: dict[str, list[ServerSpan]] = {}
    for span in spans:
        out.setdefault(span.trace_id, []).append(span)
    return out
