"""GenAI-convention spans in the report's latency breakdown: what they can give, and no shadowing.

Real OTLP protobuf bodies (opentelemetry-proto) go through the receiver's decoder into a real
store, and the report's :class:`ProbeFacts` builds the breakdown. Three probes without a server
view of their own, client TTFT 0.5 s each:

* trace 1: a gateway's GenAI span (starts 10 ms earlier, first chunk after 0.45 s) and vLLM's
  ``llm_request`` span (queue 0.05, prefill 0.3, decode 2.1, TTFT 0.35) → vLLM's view is used:
  queue 0.05, prefill 0.3, decode 2.1, network 0.5 − 0.35 = 0.15;
* trace 2: only SGLang's GenAI span (first chunk 0.3 s, no server parts) → network 0.5 − 0.3 =
  0.2, no queue / prefill / decode;
* trace 3: a gateway span without ``gen_ai.response.time_to_first_chunk`` → contributes nothing.

Hand-computed means over the probes that have each part: queue 0.05, prefill 0.3, decode 2.1
(one probe each), network (0.15 + 0.2) / 2 = 0.175.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from monitor.model import load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report.collect_probes import ProbeFacts
from monitor.report.data import Period
from monitor.report.redact import Redactor
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op, spans_op
from monitor.traces import parse_request
from tests.report import week as W
from tests.traces.otlp_bodies import VLLM_ATTRIBUTES, request, span

PROTOBUF = "application/x-protobuf"
AT = W.START + 3600
GATEWAY = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
           "gen_ai.request.model": "MiniMaxAI/MiniMax-M3", "gen_ai.response.id": "gw-1",
           "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 42}  # fmt: skip
VLLM = {**VLLM_ATTRIBUTES, "gen_ai.latency.time_in_queue": 0.05, "gen_ai.latency.time_to_first_token": 0.35,
        "gen_ai.latency.time_in_model_prefill": 0.3, "gen_ai.latency.time_in_model_decode": 2.1}  # fmt: skip


def _trace(k: int) -> bytes:
    return bytes.fromhex(f"{k:032x}")


def _at(s: Span, start: float, seconds: float) -> Span:
    s.start_time_unix_nano = int(start * 1e9)
    s.end_time_unix_nano = int((start + seconds) * 1e9)
    return s


def _bodies() -> list[bytes]:
    gateway = request(
        _at(span("chat MiniMaxAI/MiniMax-M3", trace_id=_trace(1), span_id=bytes.fromhex("1" * 16),
                 attributes={**GATEWAY, "gen_ai.response.time_to_first_chunk": 0.45}), AT - 0.01, 2.6),
        _at(span("chat MiniMaxAI/MiniMax-M3", trace_id=_trace(3), span_id=bytes.fromhex("3" * 16),
                 attributes=GATEWAY), AT + 2, 2.5),
        service="agent-gateway",
    )  # fmt: skip
    vllm = request(_at(span(trace_id=_trace(1), span_id=bytes.fromhex("2" * 16), attributes=VLLM), AT, 2.5))
    sglang = request(
        _at(span("chat MiniMaxAI/MiniMax-M3", trace_id=_trace(2), span_id=bytes.fromhex("4" * 16),
                 attributes={**GATEWAY, "gen_ai.provider.name": "sglang",
                             "gen_ai.response.time_to_first_chunk": 0.3}), AT + 1, 2.5),
        service="sglang",
    )  # fmt: skip
    return [b.SerializeToString() for b in (gateway, vllm, sglang)]


def test_genai_spans_give_what_they_can_and_a_gateway_span_does_not_hide_vllms(tmp_path: Path) -> None:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(W.CONFIG)
    model = load_model(cfg)
    url = f"sqlite:///{tmp_path / 'genai.db'}"
    upgrade(url)
    batches = [parse_request(body, PROTOBUF) for body in _bodies()]
    kept = [s for b in batches for s in b.spans]
    assert sorted((s.trace_id[-1], s.ttft) for s in kept) == [
        ("1", 0.35),
        ("1", 0.45),
        ("2", 0.3),
        ("3", None),
    ]
    bare = Timings(ttft=0.5, e2e=3.0)
    probes = [
        ProbeResult("ep-a", "chat", "chat", AT + k, None, bare, trace_id=f"{k + 1:032x}") for k in range(3)
    ]
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints), *(probe_op(model, p) for p in probes), spans_op(kept)])
        week = Period(W.WEEK, datetime.fromtimestamp(W.START, UTC), datetime.fromtimestamp(W.END, UTC))
        with store.session() as s:
            chat = {b.request_class: b for b in ProbeFacts(model, s, week, Redactor()).breakdown()}["chat"]
    finally:
        store.close()
    parts = dict(chat.parts)
    assert chat.count == 3
    assert parts["queue"] == pytest.approx(0.05)
    assert parts["prefill"] == pytest.approx(0.3)
    assert parts["decode"] == pytest.approx(2.1)
    assert parts["network"] == pytest.approx((0.15 + 0.2) / 2)
    assert chat.source("network") == "OTLP spans"
