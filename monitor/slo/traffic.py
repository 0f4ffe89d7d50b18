"""Goodput of real traffic as a live SLI: each received span judged once, counted twice alike.

A server span the OTLP receiver keeps that is in no probe's trace is one real request
(docs/slo-events.md, "Goodput of real traffic"). :class:`TrafficJudge` gives it its endpoint and
class (:class:`~monitor.slo.span_goodput.SpanJudge`'s routing), its tenant label
(:class:`~monitor.traces.tenants.TenantLabels`), its priority band
(:meth:`~monitor.model.Traffic.band`) and SpanJudge's verdict. From those labels:

* the exporter increments ``m3mon_traffic_requests_total{endpoint,class,tenant,priority,good}``,
  which the generated rules read through :func:`monitor.events.traffic_goodput`;
* :func:`traffic_slices` applies the very same definition to the batch and stores one slice per
  ``source: traffic`` SLO and endpoint, at the instant the batch was received (when the counters
  rose), so the store and the rules count the same events at the same time.

A span no class can be given is no event; it is counted under its reason
(:data:`~monitor.slo.span_goodput.UNATTRIBUTED`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from monitor import conventions as cv
from monitor import events
from monitor.model import Model
from monitor.slo.slices import SOURCE_TRAFFIC, EventSlice, clamped
from monitor.slo.span_goodput import NO_SERVICE, UNKNOWN_SERVICE, SpanJudge
from monitor.traces.span import ServerSpan
from monitor.traces.tenants import TenantLabels


@dataclass(frozen=True)
class Judged:
    """One real request: where it went and the labels of its counter increment."""

    endpoint: str
    request_class: str
    labels: dict[str, str]  # tenant, priority, good (:func:`monitor.events.traffic_labels`)


@dataclass(frozen=True)
class Verdicts:
    """A batch's real requests judged, and the ones no class could be given by reason; ``spans``:
    the batch as stored, each judged span with the tenant label its counter got (``tenant_label``)."""

    judged: tuple[Judged, ...]
    unrouted: dict[str, int]
    spans: tuple[ServerSpan, ...] = ()


class TrafficJudge:
    """Judges received spans for the live traffic SLOs of ``model``."""

    def __init__(self, model: Model, tenants: TenantLabels | None = None) -> None:
        self.model = model
        self.spans = SpanJudge(model)
        self.tenants = tenants if tenants is not None else TenantLabels(model.traffic)

    def judge(self, span: ServerSpan) -> Judged | str:
        """The request's endpoint, class and labels, or why it has no class."""
        cls, reason = self.spans.request_class(span)
        endpoint = self.spans.endpoint(span)
        if cls is None or endpoint is None:
            return reason or (UNKNOWN_SERVICE if span.service_name else NO_SERVICE)
        tenant = self.tenants.label(span.tenant)
        band = self.model.traffic.band(span.priority)
        return Judged(endpoint.name, cls, events.traffic_labels(tenant, band, self.spans.is_good(span, cls)))

    def verdicts(self, spans: Iterable[ServerSpan], is_probe: Callable[[str], bool]) -> Verdicts:
        """Every span not in a probe's trace (``is_probe(trace_id)``), judged."""
        judged: list[Judged] = []
        unrouted: dict[str, int] = {}
        kept: list[ServerSpan] = []
        for span in spans:
            found = None if is_probe(span.trace_id) else self.judge(span)
            if isinstance(found, Judged):
                judged.append(found)
                span = replace(span, tenant_label=found.labels[cv.L_TENANT])
            elif found is not None:
                unrouted[found] = unrouted.get(found, 0) + 1
            kept.append(span)
        return Verdicts(tuple(judged), unrouted, tuple(kept))


def traffic_slices(model: Model, judged: Sequence[Judged], at: float) -> list[EventSlice]:
    """One slice per ``source: traffic`` SLO and endpoint with events in ``judged``, at ``at``
    (the batch's arrival): valid and bad events by :func:`monitor.events.definition`."""
    counts: dict[tuple[str, str, str], list[float]] = {}
    by_class = {c.name: [s for s in c.slos if s.source == SOURCE_TRAFFIC] for c in model.classes}
    rules = {s.id: events.definition(s) for c in by_class.values() for s in c}
    # requests with the same class, endpoint and labels count alike: each distinct one is judged once
    alike = Counter((r.request_class, r.endpoint, tuple(sorted(r.labels.items()))) for r in judged)
    for (cls, endpoint, items), n in alike.items():
        labels = dict(items)
        for slo in by_class.get(cls, ()):
            rule = rules[slo.id]
            assert isinstance(rule, events.CounterEvents)
            if rule.is_valid(labels):
                good_total = counts.setdefault((slo.request_class, slo.name, endpoint), [0.0, 0.0])
                good_total[0] += 0.0 if rule.is_bad(labels) else float(n)
                good_total[1] += float(n)
    out = []
    for (cls, name, endpoint), (good, total) in sorted(counts.items()):
        slo = next(s for s in by_class[cls] if s.name == name)
        out.append(clamped(model.maintenance, slo, endpoint, SOURCE_TRAFFIC, (at, at), good, total))
    return out
