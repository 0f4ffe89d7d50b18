"""Failed requests in server spans: decoded from OTLP, stored, and never good in real traffic's goodput.

The oracle is docs/slo-events.md ("Goodput of real traffic"), written out here on its own: a span
is a bad event whatever its latencies when its request was **aborted** (a finish reason ``abort``
in ``gen_ai.response.finish_reasons``), ended in **error** (``error.type``, an ERROR status, or a
finish reason ``error``) or produced **no first token** (0 output tokens, or neither a token count
nor a TTFT); otherwise it is good when each figure it has is at or under its class's limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from sqlalchemy import select

from monitor.model import Model, load_model
from monitor.report import goodput
from monitor.slo.span_goodput import SpanJudge
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import spans_op
from monitor.store.tables import ProbeResultRow, ServerSpanRow
from monitor.traces import ServerSpan, parse_request
from tests.traces import otlp_bodies as B

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep, base_url: "http://127.0.0.1:9", model: m, classes: [chat]}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: ttft, sli: ttft, threshold: 1s, objective: 95, source: server}
      - {name: e2e, sli: e2e, threshold: 10s, objective: 95, source: server}
storage: {url: "sqlite:///unused.db"}
"""
TTFT_LIMIT, E2E_LIMIT = 1.0, 10.0


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Model:
    path = tmp_path_factory.mktemp("span-failures") / "monitor.yaml"
    path.write_text(CONFIG)
    return load_model(path)


def strings(key: str, *values: str) -> KeyValue:
    return KeyValue(
        key=key, value=AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=v) for v in values]))
    )


def _span(n: int, *extra: KeyValue, status: int = Status.STATUS_CODE_UNSET) -> object:
    s = B.span(span_id=bytes([0, 0, 0, 0, 0, 0, 0, n]), attributes=B.VLLM_ATTRIBUTES)
    s.attributes.extend(extra)
    s.status.code = status  # type: ignore[assignment]
    return s


def _request() -> object:
    return B.request(
        _span(1, strings("gen_ai.response.finish_reasons", "abort")),
        _span(2, status=Status.STATUS_CODE_ERROR),
        _span(3, strings("gen_ai.response.finish_reasons", "stop", "stop", "length")),
        _span(4, B.kv("gen_ai.response.finish_reasons", "error")),
        _span(5),
        service="ep",
    )


EXPECTED = {
    1: ("abort", None),
    2: (None, "error"),
    3: ("stop,length", None),
    4: ("error", None),
    5: (None, None),
}


def test_finish_reasons_and_error_status_are_decoded_and_stored(tmp_path: Path) -> None:
    message = _request()
    body = message.SerializeToString()  # type: ignore[attr-defined]
    as_json = json.dumps(B.otlp_json(message)).encode()  # type: ignore[arg-type]
    for batch in (parse_request(body, "application/x-protobuf"), parse_request(as_json, "application/json")):
        got = {int(s.span_id, 16): (s.finish_reason, s.error_type) for s in batch.spans}
        assert got == EXPECTED
    url = f"sqlite:///{tmp_path / 'm3mon.db'}"
    upgrade(url)
    store = Store(url)
    try:
        store.apply([spans_op(batch.spans)])
        with store.session() as s:
            rows = s.scalars(select(ServerSpanRow)).all()
            stored = {int(r.span_id, 16): (r.finish_reason, r.error_type) for r in rows}
    finally:
        store.close()
    assert stored == EXPECTED


def oracle(span: ServerSpan) -> tuple[bool, str | None]:
    """(good, failure) from docs/slo-events.md alone."""
    reasons = (span.finish_reason or "").split(",")
    if "abort" in reasons:
        return False, "aborted"
    if span.error_type is not None or "error" in reasons:
        return False, "error"
    if span.completion_tokens == 0 or (span.completion_tokens is None and span.ttft is None):
        return False, "no first token"
    fast = (span.ttft is None or span.ttft <= TTFT_LIMIT) and (span.e2e is None or span.e2e <= E2E_LIMIT)
    return fast, None


seconds = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0, 1.5, 9.0, 10.0, 12.0]))
spans = st.builds(
    lambda i, ttft, e2e, out, reason, error: ServerSpan(
        f"{i + 1:032x}", f"{i + 1:016x}", "llm_request", 0.0, 1.0, ttft=ttft, e2e=e2e,
        prompt_tokens=10, completion_tokens=out, service_name="ep", finish_reason=reason, error_type=error),
    st.integers(0, 10**6), seconds, seconds, st.one_of(st.none(), st.integers(0, 3)),
    st.sampled_from([None, "stop", "length", "abort", "error", "stop,abort", "length,error", "tool_calls"]),
    st.sampled_from([None, None, "error", "429"]),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(spans, max_size=30))
def test_a_failed_span_is_never_good_and_is_counted_by_reason(model: Model, batch: list[ServerSpan]) -> None:
    tally = SpanJudge(model).tally(batch).classes["chat"]
    judged = [oracle(s) for s in batch]
    failed: dict[str, int] = {}
    for _, failure in judged:
        if failure is not None:
            failed[failure] = failed.get(failure, 0) + 1
    assert (tally.spans, tally.good) == (len(batch), sum(good for good, _ in judged))
    assert tally.failed == failed


def test_the_reports_real_traffic_goodput_counts_failed_spans_bad(model: Model, tmp_path: Path) -> None:
    batch = parse_request(_request().SerializeToString(), "application/x-protobuf").spans  # type: ignore[attr-defined]
    url = f"sqlite:///{tmp_path / 'm3mon.db'}"
    upgrade(url)
    store = Store(url)
    try:
        store.apply([spans_op(batch)])
        with store.session() as s:
            start, end = B.START_NS / 1e9 - 60, B.END_NS / 1e9 + 60
            section = goodput.collect(model, s, start, end, (ProbeResultRow.id < 0,))  # no probe runs
    finally:
        store.close()
    (line,) = section.lines
    # spans 3 and 5 answered (TTFT 0.35 s, e2e 2.5 s: within the limits); 1 aborted, 2 and 4 errors
    assert (line.spans, line.span_good) == (5, 2)
    assert dict(line.span_failed) == {"aborted": 1, "error": 2}
    assert goodput.failed_text(line) == "aborted 1, error 2"
