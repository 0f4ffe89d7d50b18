"""OpenTelemetry for probes: one span per probe, its W3C ``traceparent`` sent to the server.

The probes use their own SDK tracer provider (never the global one), so trace ids are always
real even when nothing is exported. Spans are exported over OTLP/HTTP when
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, or when
:func:`configure` is given an endpoint.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from monitor import __version__
from monitor.probes.progress import note_trace

_provider: TracerProvider | None = None
_propagator = TraceContextTextMapPropagator()
#: Trace ids of this process's latest probe runs: a server span in one is a probe's, not real traffic.
RECENT_PROBE_TRACES = 100_000
_recent: deque[str] = deque()
_recent_set: set[str] = set()


def remember(trace_id: str) -> None:
    """Note a probe run's trace id (the oldest of :data:`RECENT_PROBE_TRACES` is forgotten)."""
    if trace_id in _recent_set:
        return
    _recent.append(trace_id)
    _recent_set.add(trace_id)
    while len(_recent) > RECENT_PROBE_TRACES:
        _recent_set.discard(_recent.popleft())


def is_probe_trace(trace_id: str) -> bool:
    """Whether ``trace_id`` is one of this process's recent probe runs' traces."""
    return trace_id in _recent_set


def configure(endpoint: str | None = None, processor: SpanProcessor | None = None) -> TracerProvider:
    """(Re)build the probes' tracer provider; export to ``endpoint`` (OTLP/HTTP) or the env's."""
    global _provider
    if _provider is not None:
        _provider.shutdown()
    provider = TracerProvider(resource=Resource.create({"service.name": "m3mon-probes",
                                                         "service.version": __version__}))  # fmt: skip
    endpoint = endpoint or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if endpoint or base:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        url = endpoint or base.rstrip("/") + "/v1/traces"  # type: ignore[union-attr]
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    if processor is not None:
        provider.add_span_processor(processor)
    _provider = provider
    return provider


def tracer() -> Tracer:
    provider = _provider if _provider is not None else configure()
    return provider.get_tracer("monitor.probes", __version__)


@contextmanager
def probe_span(kind: str, endpoint: str, request_class: str, model: str) -> Iterator[Span]:
    """A CLIENT span around one probe run, current for the requests made inside it."""
    name = f"probe {kind}"
    attributes = {
        "m3mon.probe.kind": kind,
        "m3mon.endpoint": endpoint,
        "m3mon.request_class": request_class,
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
    }
    with tracer().start_as_current_span(name, kind=trace.SpanKind.CLIENT, attributes=attributes) as span:
        trace_id = trace_id_of(span)
        note_trace(trace_id)
        if trace_id is not None:
            remember(trace_id)
        yield span


def trace_headers() -> dict[str, str]:
    """``traceparent`` (and ``tracestate``) of the current span, for the outgoing request."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier


def trace_id_of(span: Span) -> str | None:
    ctx = span.get_span_context()
    return f"{ctx.trace_id:032x}" if ctx.is_valid else None
