"""Goodput of real traffic: server spans judged by :mod:`monitor.slo.goodput` against their class.

A stored server span (vLLM's ``llm_request``, or a GenAI-convention span, :mod:`monitor.traces.span`)
is one request the server finished. To judge it, it needs a class (docs/slo-events.md, "Goodput of
real traffic"):

* **endpoint**: the endpoint whose :attr:`~monitor.model.Endpoint.service_name` (``span_service_name``,
  else the endpoint's name) equals the span's OTLP resource ``service.name``;
* **class**: the endpoint's ``span_class`` when set; else its only class; else the class whose
  ``max_context_tokens`` is the smallest that holds the span's prompt + output tokens (the routing
  assumption: traffic goes to the tightest pool it fits). A span of a multi-class endpoint without
  token counts, too long for every class, or fitting several classes of the same smallest ceiling
  cannot be routed.

A span that cannot be attributed is counted under its reason (:data:`UNATTRIBUTED`), never dropped.

The span as one request (:func:`span_latency`), all server-side (arrival at the engine's HTTP
server to its last token: network and proxy time are **not** in it, unlike a probe's figures):
``ttft``, ``e2e``, ``queue_time`` = its queue, ``tpot`` = ``itl`` = (e2e − ttft) / (output tokens − 1)
(the request's mean time per output token, as a probe's ``itl`` for goodput is its mean per-token
ITL); ``stall`` is not measurable from a span (no per-chunk times) and does not count.

A span whose request failed is never good, whatever its latencies (:func:`span_failure`, in this
order): **aborted** (a finish reason ``abort``: the client gave up or the server cancelled it),
**error** (an ``error.type`` attribute, an ERROR status or a finish reason ``error``), **no first
token** (no output token: 0 output tokens, or neither a token count nor a TTFT).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from monitor import conventions as cv
from monitor.model import Endpoint, Model
from monitor.slo.goodput import GOODPUT_METRICS, RequestLatency, is_good, limits
from monitor.traces.span import ServerSpan

#: Why a span has no class, in display order.
NO_SERVICE: Final = "no service.name"
UNKNOWN_SERVICE: Final = "service.name of no endpoint"
NO_TOKENS: Final = "multi-class endpoint, no token counts"
TOO_LONG: Final = "longer than every class ceiling of its endpoint"
TIED: Final = "several classes share the fitting ceiling"
UNATTRIBUTED: Final = (NO_SERVICE, UNKNOWN_SERVICE, NO_TOKENS, TOO_LONG, TIED)
#: Why a span's request failed (a bad event whatever its latencies), in display order.
ABORTED: Final = "aborted"
ERRORED: Final = "error"
NO_FIRST_TOKEN: Final = "no first token"
FAILURES: Final = (ABORTED, ERRORED, NO_FIRST_TOKEN)
#: Goodput metrics a server span cannot measure.
NOT_FROM_SPANS: Final = ("stall",)


def ladder(endpoint: Endpoint, ceilings: Mapping[str, int]) -> tuple[tuple[int, str], ...]:
    """The endpoint's classes as (context ceiling, class), smallest ceiling first."""
    return tuple(sorted((ceilings[c], c) for c in endpoint.classes))


def route(endpoint: Endpoint, classes: tuple[tuple[int, str], ...], tokens: int | None) -> str:
    """The class of a span of ``endpoint`` (its :func:`ladder` ``classes``) with ``tokens`` prompt +
    output tokens, else the reason it has none."""
    if endpoint.span_class is not None:
        return endpoint.span_class
    if len(classes) == 1:
        return classes[0][1]
    if tokens is None:
        return NO_TOKENS
    for i, (ceiling, name) in enumerate(classes):
        if tokens <= ceiling:
            tied = i + 1 < len(classes) and classes[i + 1][0] == ceiling
            return TIED if tied else name
    return TOO_LONG


def span_failure(span: ServerSpan) -> str | None:
    """Why the span's request failed (a :data:`FAILURES` value), None when it answered."""
    reasons = set((span.finish_reason or "").split(","))
    if reasons.intersection(cv.FINISHED_NOT_COUNTED):
        return ABORTED
    if span.error_type is not None or reasons.intersection(cv.FINISHED_BAD):
        return ERRORED
    if span.completion_tokens == 0 or (span.completion_tokens is None and span.ttft is None):
        return NO_FIRST_TOKEN
    return None


def span_latency(span: ServerSpan) -> RequestLatency:
    """The span as one request of :mod:`monitor.slo.goodput` (server-side seconds)."""
    out = span.completion_tokens
    per_token = None
    if out is not None and out >= 2 and span.e2e is not None and span.ttft is not None:
        per_token = max(0.0, span.e2e - span.ttft) / (out - 1)
    return RequestLatency(
        ok=span_failure(span) is None,
        ttft=span.ttft,
        tpot=per_token,
        itl=per_token,
        e2e=span.e2e,
        queue_time=span.queue,
    )


@dataclass
class ClassTally:
    """Spans of one class: how many, how many good, their output tokens and the good ones', and
    the failed ones by :func:`span_failure` reason."""

    spans: int = 0
    good: int = 0
    output_tokens: int = 0
    good_output_tokens: int = 0
    failed: dict[str, int] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        return self.good / self.spans if self.spans else None

    @property
    def token_ratio(self) -> float | None:
        return self.good_output_tokens / self.output_tokens if self.output_tokens else None


@dataclass
class SpanGoodput:
    """The tally of a set of spans: per class, and the spans no class could be given, by reason."""

    classes: dict[str, ClassTally] = field(default_factory=dict)
    unattributed: dict[str, int] = field(default_factory=dict)


class SpanJudge:
    """Attributes spans to classes of ``model`` and judges them against their class's limits."""

    def __init__(self, model: Model) -> None:
        self.ceilings = {c.name: c.max_context_tokens for c in model.classes}
        self.endpoints = {e.service_name: (e, ladder(e, self.ceilings)) for e in model.endpoints}
        self.limits = {c.name: limits(c.slos) for c in model.classes}

    def request_class(self, span: ServerSpan) -> tuple[str | None, str | None]:
        """(class, None) for an attributable span, (None, reason) for one that is not."""
        if span.service_name is None:
            return None, NO_SERVICE
        found_endpoint = self.endpoints.get(span.service_name)
        if found_endpoint is None:
            return None, UNKNOWN_SERVICE
        tokens = None
        if span.prompt_tokens is not None and span.completion_tokens is not None:
            tokens = span.prompt_tokens + span.completion_tokens
        found = route(*found_endpoint, tokens)
        return (None, found) if found in UNATTRIBUTED else (found, None)

    def endpoint(self, span: ServerSpan) -> Endpoint | None:
        """The endpoint whose service name the span carries (None: no such endpoint)."""
        found = self.endpoints.get(span.service_name) if span.service_name is not None else None
        return found[0] if found is not None else None

    def is_good(self, span: ServerSpan, request_class: str) -> bool:
        """Whether the span met every goodput limit of ``request_class`` (the judgement every
        real-traffic figure uses: the report's goodput, the live ``source: traffic`` SLOs)."""
        return is_good(span_latency(span), self.limits[request_class])

    def judged(self, request_class: str) -> tuple[str, ...]:
        """The goodput limits of ``request_class`` a span can be judged on (GOODPUT_METRICS order)."""
        own = self.limits[request_class]
        return tuple(m for m in GOODPUT_METRICS if m in own and m not in NOT_FROM_SPANS)

    def tally(self, spans: Iterable[ServerSpan]) -> SpanGoodput:
        """Every span counted once: in its class (good or not), or under why it has none."""
        out = SpanGoodput({name: ClassTally() for name in self.ceilings})
        for span in spans:
            cls, reason = self.request_class(span)
            if cls is None:
                key = reason or NO_SERVICE
                out.unattributed[key] = out.unattributed.get(key, 0) + 1
                continue
            tally, tokens = out.classes[cls], span.completion_tokens or 0
            tally.spans += 1
            tally.output_tokens += tokens
            failure = span_failure(span)
            if failure is not None:
                tally.failed[failure] = tally.failed.get(failure, 0) + 1
            if self.is_good(span, cls):
                tally.good += 1
                tally.good_output_tokens += tokens
        return out
