"""OTLP export requests built with the opentelemetry-proto classes, as protobuf and as OTLP JSON."""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN = bytes.fromhex("b7ad6b7169203331")
PARENT = bytes.fromhex("00f067aa0ba902b7")
START_NS = 1_764_000_000_250_000_000
END_NS = START_NS + 2_500_000_000

VLLM_ATTRIBUTES: dict[str, object] = {
    "gen_ai.request.id": "chatcmpl-abc",
    "gen_ai.usage.prompt_tokens": 120,
    "gen_ai.usage.completion_tokens": 42,
    "gen_ai.latency.time_in_queue": 0.05,
    "gen_ai.latency.time_to_first_token": 0.35,
    "gen_ai.latency.time_in_model_prefill": 0.3,
    "gen_ai.latency.time_in_model_decode": 2.1,
    "gen_ai.latency.time_in_model_inference": 2.4,
    "gen_ai.latency.e2e": 2.5,
}


def kv(key: str, value: object) -> KeyValue:
    if isinstance(value, bool):
        v = AnyValue(bool_value=value)
    elif isinstance(value, int):
        v = AnyValue(int_value=value)
    elif isinstance(value, float):
        v = AnyValue(double_value=value)
    else:
        v = AnyValue(string_value=str(value))
    return KeyValue(key=key, value=v)


def span(name: str = "llm_request", *, trace_id: bytes = TRACE, span_id: bytes = SPAN,
         attributes: dict[str, object] | None = None, kind: int = Span.SPAN_KIND_SERVER) -> Span:  # fmt: skip
    attrs = VLLM_ATTRIBUTES if attributes is None else attributes
    return Span(trace_id=trace_id, span_id=span_id, parent_span_id=PARENT, name=name, kind=kind,  # type: ignore[arg-type]
                start_time_unix_nano=START_NS, end_time_unix_nano=END_NS,
                attributes=[kv(k, v) for k, v in attrs.items()])  # fmt: skip


def request(*spans: Span, service: str = "vllm-server") -> ExportTraceServiceRequest:
    resource = Resource(attributes=[kv("service.name", service)])
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=list(spans))])]
    )


def _hex_ids(node: Any) -> Any:
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v)
            for k, v in node.items()
        }
    return node


def otlp_json(message: ExportTraceServiceRequest) -> dict[str, Any]:
    """OTLP JSON encoding: protobuf's JSON mapping with ids as hex strings."""
    return dict(_hex_ids(MessageToDict(message)))
