"""vLLM-shaped ``llm_request`` spans, exported by the real OpenTelemetry OTLP/HTTP exporter."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def llm_spans(request_ids: list[str]) -> tuple[ReadableSpan, ...]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "vllm-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("vllm.llm_engine")
    for rid in request_ids:
        with tracer.start_as_current_span("llm_request") as span:
            span.set_attribute("gen_ai.request.id", rid)
            span.set_attribute("gen_ai.usage.prompt_tokens", 12)
            span.set_attribute("gen_ai.latency.e2e", 0.25)
    provider.shutdown()
    return memory.get_finished_spans()


def export(exporter: OTLPSpanExporter, request_ids: list[str]) -> SpanExportResult:
    try:
        return exporter.export(llm_spans(request_ids))
    finally:
        exporter.shutdown()


#: Run by the compose entrypoint in a test: vLLM's way, endpoint given, headers and CA from the env.
CHILD = """
import sys
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from tests.service.spans import export
result = export(OTLPSpanExporter(endpoint=sys.argv[1]), [sys.argv[2]])
print(result.name)
sys.exit(0 if result.name == "SUCCESS" else 1)
"""
