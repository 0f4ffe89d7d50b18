"""OTLP/HTTP trace bodies decode into ServerSpans; anything malformed is refused whole."""

from __future__ import annotations

import gzip
import json

import pytest

from monitor.traces import MAX_BODY_BYTES, OtlpError, ServerSpan, parse_request
from monitor.traces.otlp import UnsupportedEncoding
from tests.traces import otlp_bodies as B

PB = "application/x-protobuf"

EXPECTED = ServerSpan(
    trace_id=B.TRACE.hex(), span_id=B.SPAN.hex(), name="llm_request", start=B.START_NS / 1e9, end=B.END_NS / 1e9,
    queue=0.05, ttft=0.35, prefill=0.3, decode=2.1, inference=2.4, e2e=2.5, prompt_tokens=120,
    completion_tokens=42, request_id="chatcmpl-abc", service_name="vllm-server",
)  # fmt: skip


def test_protobuf_body_gives_the_llm_request_span_and_ignores_others() -> None:
    probe = B.span("probe chat", span_id=B.PARENT, attributes={"m3mon.probe.kind": "chat"}, kind=3)
    body = B.request(probe, B.span()).SerializeToString()
    batch = parse_request(body, PB)
    assert batch.spans == (EXPECTED,)
    assert batch.ignored == 1


def test_json_body_with_hex_ids_gives_the_same_span() -> None:
    body = json.dumps(B.otlp_json(B.request(B.span()))).encode()
    assert '"traceId": "0af7651916cd43dd8448eb211c80319c"' in body.decode()
    batch = parse_request(body, "application/json; charset=utf-8")
    assert batch.spans == (EXPECTED,) and batch.ignored == 0


def test_gzip_body_is_inflated() -> None:
    body = gzip.compress(B.request(B.span()).SerializeToString())
    assert parse_request(body, PB, "gzip").spans == (EXPECTED,)


def test_missing_or_mistyped_attributes_become_none() -> None:
    attrs = {
        "gen_ai.latency.time_in_queue": "fast",
        "gen_ai.usage.prompt_tokens": 1.5,
        "gen_ai.request.id": 7,
    }
    (got,) = parse_request(B.request(B.span(attributes=attrs)).SerializeToString(), PB).spans
    assert got.queue is None and got.prompt_tokens is None and got.request_id is None and got.ttft is None
    assert got.trace_id == B.TRACE.hex()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"not a protobuf", PB),
        (b"\xff\xff\xff\xff", PB),
        (b"{not json", "application/json"),
        (b"[1, 2]", "application/json"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "name": "llm_request"}]}]}]}',
         "application/json"),
        (b'{"resourceSpans": 5}', "application/json"),
        (B.request(B.span(), B.span(trace_id=b"\x01" * 4)).SerializeToString(), PB),
        (B.request(B.span(span_id=b"\x00" * 8)).SerializeToString(), PB),
    ],
)  # fmt: skip
def test_malformed_bodies_are_refused_whole(body: bytes, content_type: str) -> None:
    with pytest.raises(OtlpError):
        parse_request(body, content_type)


def test_unsupported_encodings_are_named() -> None:
    body = B.request(B.span()).SerializeToString()
    with pytest.raises(UnsupportedEncoding, match="content type"):
        parse_request(body, "text/plain")
    with pytest.raises(UnsupportedEncoding, match="content encoding"):
        parse_request(body, PB, "br")
    with pytest.raises(OtlpError, match="gzip"):
        parse_request(body, PB, "gzip")


def test_bodies_beyond_the_cap_are_refused_even_when_compressed() -> None:
    bomb = gzip.compress(b"\x00" * (MAX_BODY_BYTES + 1))
    assert len(bomb) < MAX_BODY_BYTES
    with pytest.raises(OtlpError, match="inflates beyond"):
        parse_request(bomb, PB, "gzip")
    with pytest.raises(OtlpError, match="exceeds"):
        parse_request(b"\x00" * (MAX_BODY_BYTES + 1), PB)
