"""OTLP trace input: vLLM's per-request ``llm_request`` spans and GenAI-convention spans, over OTLP/HTTP."""

from monitor.traces.otlp import MAX_BODY_BYTES, Batch, parse_request
from monitor.traces.span import SERVER_SPAN_NAME, OtlpError, ServerSpan

__all__ = ["MAX_BODY_BYTES", "SERVER_SPAN_NAME", "Batch", "OtlpError", "ServerSpan", "parse_request"]
