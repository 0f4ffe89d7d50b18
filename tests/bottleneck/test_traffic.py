"""A real-traffic trace as one tail sample (monitor.bottleneck.traffic), against stages worked out
by hand from docs/traces.md's definitions on a hand-built gateway trace with a retried 429."""

from __future__ import annotations

import pytest

from monitor.bottleneck.tail import SOURCE_SPANS
from monitor.bottleneck.traffic import by_trace, traffic_sample, traffic_samples
from monitor.traces.span import ServerSpan

TRACE = "a" * 32
T = 1_796_000_000.0


def _trace() -> list[ServerSpan]:
    gateway = ServerSpan(TRACE, "1" * 16, "POST /v1/chat/completions", T, T + 3.0)
    failed = ServerSpan(TRACE, "2" * 16, "llm_request", T + 0.1, T + 0.3, queue=0.1, error_type="429")
    answer = ServerSpan(TRACE, "3" * 16, "llm_request", T + 1.0, T + 2.9, queue=0.05, ttft=0.5, prefill=0.4,
                        decode=1.3, service_name="ep")  # fmt: skip
    return [gateway, failed, answer]


def test_a_gateway_trace_with_a_retry_is_one_request() -> None:
    s = traffic_sample(_trace(), lambda span: "chat" if span.service_name == "ep" else None)
    assert s is not None and (s.request_class, s.view, s.gateway_retry) == ("chat", SOURCE_SPANS, True)
    # retry: first failed attempt's start (0.1) to the answer's (1.0); e2e: the gateway span, 3.0 s;
    # network: 3.0 - 0.9 - the answer's 1.9 s = 0.2; tokenization: 0.5 - 0.05 - 0.4 = 0.05
    expected = {
        "retry": 0.9,
        "network": 0.2,
        "tokenization": 0.05,
        "queue": 0.05,
        "prefill": 0.4,
        "decode": 1.3,
    }
    assert s.parts == pytest.approx(expected, abs=1e-6)
    assert s.e2e == pytest.approx(3.0, abs=1e-6) and s.ttft == pytest.approx(0.9 + 0.2 + 0.5, abs=1e-6)
    assert s.at == T + 1.0


def test_a_trace_without_a_class_or_an_answer_is_no_sample() -> None:
    assert traffic_sample(_trace(), lambda span: None) is None
    assert traffic_sample(_trace()[:2], lambda span: "chat") is None  # only the failed attempt
    other = ServerSpan("b" * 32, "4" * 16, "llm_request", T - 5, T - 4, queue=0.1, ttft=0.6, prefill=0.4,
                       decode=0.3)  # fmt: skip
    found = traffic_samples(by_trace([*_trace(), other]), lambda span: "chat")
    assert [s.at for s in found] == [T - 5, T + 1.0]  # oldest first, one per trace
