"""OpenTelemetry request spans as vLLM V1 emits them (``--otlp-traces-endpoint``).

One ``llm_request`` SERVER span per finished request, started at the request's arrival, parented
on the client's W3C ``traceparent``, with vLLM 0.33's ``gen_ai.*`` attributes. The CLI flag uses
the OTLP/HTTP protobuf exporter; tests may pass any ``SpanExporter`` (e.g. an in-memory one).
"""

from __future__ import annotations

import logging
import os
from typing import Any
from urllib.parse import urlparse

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from monitor.sim.request import SimRequest

log = logging.getLogger(__name__)


#: Request field -> span attribute, with ``--tenant-span-attributes`` (the monitor's default
#: ``traffic.tenant_attributes`` and ``priority_attribute``).
TENANT_ATTRIBUTES = {"user": "user.id", "priority": "vllm.request.priority"}


def otlp_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL: ``/v1/traces`` is appended when ``endpoint`` has no path."""
    return endpoint if urlparse(endpoint).path not in ("", "/") else endpoint.rstrip("/") + "/v1/traces"


class RequestTracer:
    """Emits the per-request spans of one simulated server."""

    def __init__(
        self, endpoint: str | None, exporter: SpanExporter | None, tenants: bool = False,
        service_name: str = "vllm-server",
    ) -> None:  # fmt: skip
        self.tenants = tenants
        attrs: dict[str, Any] = {
            "vllm.instrumenting_module_name": "vllm.llm_engine",
            "vllm.process_id": os.getpid(),
        }
        if "OTEL_SERVICE_NAME" not in os.environ:
            attrs["service.name"] = service_name
        self.provider = TracerProvider(resource=Resource.create(attrs))
        if exporter is not None:
            self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        elif endpoint is not None:
            self.provider.add_span_processor(
                BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_url(endpoint)))
            )
        self.tracer = self.provider.get_tracer("vllm.llm_engine")
        self.propagator = TraceContextTextMapPropagator()

    def record(self, req: SimRequest, wall_offset: float) -> None:
        """Emit the span of a finished request (errors are logged, never raised)."""
        try:
            self._record(req, wall_offset)
        except Exception:  # the engine must not die because an exporter did
            log.exception("could not record the span of %s", req.request_id)

    def _record(self, req: SimRequest, wall_offset: float) -> None:
        assert req.finish is not None
        ctx = self.propagator.extract(req.trace_headers)
        ns = 1_000_000_000
        span = self.tracer.start_span(
            "llm_request", context=ctx, kind=SpanKind.SERVER, start_time=int((req.arrival + wall_offset) * ns)
        )
        attrs: dict[str, Any] = {
            "gen_ai.request.id": req.request_id,
            "gen_ai.usage.prompt_tokens": req.prompt_tokens,
            "gen_ai.usage.completion_tokens": req.generated,
            "gen_ai.latency.e2e": req.finish - req.arrival,
        }
        if req.scheduled is not None and req.queued is not None:
            attrs["gen_ai.latency.time_in_queue"] = req.scheduled - req.queued
        if req.first_token is not None and req.scheduled is not None:
            last = req.token_times[-1]
            attrs["gen_ai.latency.time_to_first_token"] = req.first_token - req.arrival
            attrs["gen_ai.latency.time_in_model_prefill"] = req.first_token - req.scheduled
            attrs["gen_ai.latency.time_in_model_decode"] = last - req.first_token
            attrs["gen_ai.latency.time_in_model_inference"] = last - req.scheduled
        for key in ("top_p", "temperature", "n"):
            if req.params.get(key):
                attrs[f"gen_ai.request.{key}"] = req.params[key]
        if req.max_tokens is not None:
            attrs["gen_ai.request.max_tokens"] = req.max_tokens
        if self.tenants:  # what a gateway in front adds: the tenant and the request's priority
            attrs.update({a: req.params[k] for k, a in TENANT_ATTRIBUTES.items() if k in req.params})
        span.set_attributes(attrs)
        span.end(end_time=int((req.finish + wall_offset) * ns))

    def shutdown(self) -> None:
        self.provider.shutdown()
