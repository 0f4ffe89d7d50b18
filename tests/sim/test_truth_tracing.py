"""Ground truth agrees with what a client observes; request spans match vLLM's llm_request span."""

from __future__ import annotations

import json
import time

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from monitor.sim.harness import running_simulator
from monitor.sim.tracing import otlp_url
from tests.sim.conftest import FAST, HTTP, ask

pytestmark = pytest.mark.timeout(60)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def test_truth_matches_client_timings() -> None:
    with running_simulator(**FAST) as sim:
        sent = time.monotonic()
        arrivals: list[float] = []
        headers = {"traceparent": TRACEPARENT, "X-Request-Id": "probe-1"}
        body = ask("Tell me about rivers", stream=True, stream_options={"include_usage": True})
        with HTTP.stream("POST", f"{sim.base_url}/v1/chat/completions", json=body, headers=headers) as r:
            for line in r.iter_lines():
                if line.startswith("data: {") and json.loads(line[6:]).get("choices"):
                    arrivals.append(time.monotonic())
        done = time.monotonic()
        (t,) = sim.truth()["requests"]
        assert t["id"] == "chatcmpl-probe-1" and t["trace_id"] == TRACE_ID
        assert (
            sent
            <= t["received"]["mono"]
            <= t["arrival"]["mono"]
            <= t["queued"]["mono"]
            <= t["scheduled"]["mono"]
        )
        assert t["scheduled"]["mono"] <= t["first_token"]["mono"] <= arrivals[0] <= done
        assert t["token_times"]["mono"][-1] == t["finish"]["mono"] <= arrivals[-1]
        assert len(t["token_times"]["mono"]) == t["completion_tokens"]
        sent, counts = t["sent_times"]["mono"], t["sent_tokens"]
        assert (
            len(sent) == len(counts) >= 2
            and counts == sorted(counts)
            and counts[-1] == t["completion_tokens"]
        )
        assert sent == sorted(sent) and t["first_token"]["mono"] <= sent[0] <= arrivals[0]
        assert t["token_times"]["mono"][counts[0] - 1] <= sent[0] and sent[-1] <= arrivals[-1]
        offset = sim.truth()["clock"]["wall_offset"]
        assert abs(t["arrival"]["wall"] - t["arrival"]["mono"] - offset) < 1e-6
        assert HTTP.get(f"{sim.base_url}/sim/truth").json()["requests"][0]["id"] == "chatcmpl-probe-1"


def test_llm_request_span() -> None:
    exporter = InMemorySpanExporter()
    with running_simulator(span_exporter=exporter, **FAST) as sim:
        body = HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ask("hello", max_tokens=50, temperature=0.5),
                         headers={"traceparent": TRACEPARENT}).json()  # fmt: skip
        deadline = time.monotonic() + 5
        while not exporter.get_finished_spans():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        (span,) = exporter.get_finished_spans()
        (t,) = sim.truth()["requests"]
    assert span.name == "llm_request" and span.kind == SpanKind.SERVER
    assert span.context is not None and format(span.context.trace_id, "032x") == TRACE_ID
    assert span.parent is not None and format(span.parent.span_id, "016x") == "00f067aa0ba902b7"
    a = span.attributes or {}
    assert a["gen_ai.request.id"] == body["id"]
    assert a["gen_ai.usage.prompt_tokens"] == body["usage"]["prompt_tokens"]
    assert a["gen_ai.usage.completion_tokens"] == body["usage"]["completion_tokens"]
    assert a["gen_ai.request.max_tokens"] == 50 and a["gen_ai.request.temperature"] == 0.5
    for key in ("time_to_first_token", "e2e", "time_in_queue", "time_in_model_prefill", "time_in_model_decode",
                "time_in_model_inference"):  # fmt: skip
        assert isinstance(a[f"gen_ai.latency.{key}"], float)
    assert abs(span.start_time / 1e9 - t["arrival"]["wall"]) < 1e-3
    assert abs(a["gen_ai.latency.e2e"] - (t["finish"]["mono"] - t["arrival"]["mono"])) < 1e-9


def test_otlp_url() -> None:
    assert otlp_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert otlp_url("http://c:4318/custom") == "http://c:4318/custom"
