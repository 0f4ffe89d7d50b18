"""The OTLP receiver keeps GenAI-convention spans from sources other than vLLM (semconv v1.37).

Bodies are real OTLP protobuf (opentelemetry-proto). A gateway's or SGLang's span names its
``gen_ai.operation.name`` and reports ``gen_ai.usage.input_tokens`` / ``output_tokens`` and
``gen_ai.response.id``; the monitor's own probe spans (``m3mon.probe.kind``) and spans without
GenAI attributes are not a server's view and are dropped.
"""

from __future__ import annotations

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from monitor.traces import parse_request
from tests.traces.otlp_bodies import END_NS, START_NS, request, span

PROTOBUF = "application/x-protobuf"
GENAI = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "sglang",
         "gen_ai.request.model": "MiniMaxAI/MiniMax-M3", "gen_ai.response.id": "req-7",
         "gen_ai.usage.input_tokens": 900, "gen_ai.usage.output_tokens": 64}  # fmt: skip


def test_genai_span_from_sglang_is_kept_with_tokens_and_duration() -> None:
    probe = {**GENAI, "m3mon.probe.kind": "chat"}
    body = request(
        span("chat MiniMaxAI/MiniMax-M3", attributes=GENAI),
        span(
            "probe chat",
            span_id=bytes.fromhex("aaaaaaaaaaaaaaaa"),
            attributes=probe,
            kind=Span.SPAN_KIND_CLIENT,
        ),
        span("HTTP GET", span_id=bytes.fromhex("bbbbbbbbbbbbbbbb"), attributes={"http.method": "GET"}),
        service="sglang",
    ).SerializeToString()
    batch = parse_request(body, PROTOBUF)
    assert batch.ignored == 2
    (kept,) = batch.spans
    assert kept.name == "chat MiniMaxAI/MiniMax-M3" and kept.service_name == "sglang"
    assert (kept.prompt_tokens, kept.completion_tokens, kept.request_id) == (900, 64, "req-7")
    assert kept.e2e == (END_NS - START_NS) / 1e9 == 2.5
    assert kept.queue is None and kept.ttft is None and kept.prefill is None
