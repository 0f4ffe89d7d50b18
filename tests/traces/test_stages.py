"""A trace's stages against an oracle written from docs/traces.md ("Stages of a trace") on
hand-built spans decoded by the real OTLP path: a vLLM span alone, and a gateway trace with two
attempts (the first failed). The stages sum to the request's e2e within 1 ms."""

from __future__ import annotations

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from monitor.traces.otlp import parse_request
from monitor.traces.span import ServerSpan
from monitor.traces.stages import TRACE_STAGES, trace_stages
from tests.traces import otlp_bodies as B

T0 = 1_764_000_000.0
VLLM = {"gen_ai.request.id": "chatcmpl-1", "gen_ai.latency.time_to_first_token": 0.5,
        "gen_ai.latency.time_in_queue": 0.2, "gen_ai.latency.time_in_model_prefill": 0.25,
        "gen_ai.latency.time_in_model_decode": 1.8, "gen_ai.latency.e2e": 2.36}  # fmt: skip
GATEWAY = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "MiniMaxAI/MiniMax-M3"}


def _span(n: int, name: str, start: float, end: float, attrs: dict[str, object], error: bool = False) -> Span:
    return Span(trace_id=B.TRACE, span_id=n.to_bytes(8, "big"), name=name, kind=Span.SPAN_KIND_SERVER,
                start_time_unix_nano=round((T0 + start) * 1e9), end_time_unix_nano=round((T0 + end) * 1e9),
                attributes=[B.kv(k, v) for k, v in attrs.items()],
                status=Status(code=Status.STATUS_CODE_ERROR if error else Status.STATUS_CODE_UNSET))  # fmt: skip


def _decoded(*spans: Span) -> list[ServerSpan]:
    body = B.request(*spans).SerializeToString()
    return list(parse_request(body, "application/x-protobuf").spans)


def _check(spans: list[ServerSpan], expected: dict[str, float], e2e: float) -> None:
    st = trace_stages(spans)
    assert st is not None
    assert dict(st.stages) == pytest.approx(expected, abs=1e-6)
    assert st.e2e == pytest.approx(e2e, abs=1e-6)
    assert sum(v or 0.0 for _, v in st.stages) == pytest.approx(st.e2e, abs=1e-3)  # within 1 ms


def test_a_vllm_span_alone() -> None:
    # arrival at 0, recorded at 2.36 s: tokenization = 0.5 - 0.2 - 0.25, other = 2.36 - 2.3
    spans = _decoded(_span(1, "llm_request", 0.0, 2.36, VLLM))
    expected = {"retry": 0.0, "network": 0.0, "tokenization": 0.05, "queue": 0.2, "prefill": 0.25,
                "decode": 1.8, "other": 0.06}  # fmt: skip
    _check(spans, expected, 2.36)


@pytest.mark.parametrize("marked", ["error.type", "status"])
def test_a_gateway_trace_with_two_attempts(marked: str) -> None:
    # gateway [0, 3.0]; attempt 1 [0.01, 0.11] answered 429; attempt 2 [0.61, 2.99] around vLLM's
    # span [0.62, 2.98]: retry = 0.61 - 0.01, network = 3.0 - 0.6 - 2.36
    failed = {**GATEWAY, "error.type": "429"} if marked == "error.type" else GATEWAY
    spans = _decoded(
        _span(1, "chat MiniMaxAI/MiniMax-M3", 0.0, 3.0, GATEWAY),
        _span(2, "chat MiniMaxAI/MiniMax-M3", 0.01, 0.11, failed, error=marked == "status"),
        _span(3, "chat MiniMaxAI/MiniMax-M3", 0.61, 2.99, GATEWAY),
        _span(4, "llm_request", 0.62, 2.98, VLLM),
    )
    assert [s.error_type for s in spans] == [None, "429" if marked == "error.type" else "error", None, None]
    expected = {"retry": 0.6, "network": 0.04, "tokenization": 0.05, "queue": 0.2, "prefill": 0.25,
                "decode": 1.8, "other": 0.06}  # fmt: skip
    _check(spans, expected, 3.0)
    st = trace_stages(spans)
    assert st is not None and st.attempts == 2 and st.answer.span_id == f"{4:016x}"


def test_attempts_without_a_gateway_span_around_them() -> None:
    # a client retried straight to vLLM: the failed attempt is vLLM's own ERROR span, the answer starts at 1.0
    spans = _decoded(
        _span(1, "llm_request", 0.0, 0.3, {}, error=True), _span(2, "llm_request", 1.0, 3.36, VLLM)
    )
    expected = {"retry": 1.0, "network": 0.0, "tokenization": 0.05, "queue": 0.2, "prefill": 0.25,
                "decode": 1.8, "other": 0.06}  # fmt: skip
    _check(spans, expected, 3.36)


def test_no_answer_no_stages() -> None:
    assert trace_stages(_decoded(_span(1, "chat m", 0.0, 1.0, GATEWAY))) is None
    assert TRACE_STAGES[:2] == ("retry", "network")
