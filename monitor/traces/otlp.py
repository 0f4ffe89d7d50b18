"""OTLP/HTTP trace export requests (protobuf or JSON) decoded into :class:`ServerSpan` records.

An ``ExportTraceServiceRequest`` body is decoded whole before anything is kept, so a malformed
body raises :class:`OtlpError` and yields nothing. Accepted encodings: ``application/x-protobuf``
(what the OTLP/HTTP exporters of vLLM and the OpenTelemetry SDKs send) and ``application/json``
(OTLP JSON: ids are hex strings, not base64), optionally ``Content-Encoding: gzip``. Spans named
``llm_request`` (vLLM) and spans following the GenAI conventions (a ``gen_ai.operation.name``,
not the monitor's own probe spans) become ServerSpans; every other span is counted as ignored.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf.json_format import ParseDict, ParseError
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Status

from monitor.traces.span import (
    SERVICE_NAME,
    OtlpError,
    ServerSpan,
    TenantKeys,
    is_request_span,
    server_span,
)
from monitor.traces.validate import validated

#: Request bodies (after gunzip) above this size are refused; an SDK batch of 512 spans is ~0.5 MB.
MAX_BODY_BYTES: Final = 8 * 1024 * 1024
PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
#: OTLP JSON fields that hold ids as hex strings (protobuf's JSON mapping expects base64).
_ID_FIELDS: Final = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})
_HEX: Final = re.compile(r"[0-9a-fA-F]*")


class UnsupportedEncoding(OtlpError):
    """A content type or encoding the receiver does not speak (HTTP 415)."""


@dataclass(frozen=True)
class Batch:
    """What one export request held: the kept (``llm_request`` and GenAI) spans, and how many others."""

    spans: tuple[ServerSpan, ...]
    ignored: int


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def gunzip(body: bytes, limit: int = MAX_BODY_BYTES) -> bytes:
    """Inflate a gzip body, refusing (OtlpError) one that is corrupt or inflates beyond ``limit``."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise OtlpError(f"gzip body: {exc}") from None
    if len(out) > limit:
        raise OtlpError(f"body inflates beyond {limit} bytes")
    if not inflater.eof:
        raise OtlpError("gzip body is truncated")
    return out


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP JSON -> protobuf JSON mapping: hex id strings become base64."""
    import base64

    if isinstance(node, list):
        return [_hex_ids_to_base64(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ID_FIELDS and isinstance(value, str):
            if len(value) % 2 or not _HEX.fullmatch(value):
                raise OtlpError(f"{key} must be a hex string, got {value[:40]!r}")
            value = base64.b64encode(bytes.fromhex(value)).decode()
        out[key] = _hex_ids_to_base64(value)
    return out


def decode(body: bytes, content_type: str | None) -> ExportTraceServiceRequest:
    """The export request in ``body``; OtlpError when it is not one."""
    kind = media_type(content_type)
    request = ExportTraceServiceRequest()
    if kind == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RuntimeWarning, ValueError) as exc:
            raise OtlpError(f"not an OTLP protobuf ExportTraceServiceRequest: {exc}") from None
    elif kind == JSON:
        try:
            document = json.loads(body)
            if not isinstance(document, dict):
                raise OtlpError("OTLP JSON body must be an object")
            ParseDict(_hex_ids_to_base64(document), request)
        except (ValueError, ParseError, RecursionError) as exc:
            raise OtlpError(f"not an OTLP JSON ExportTraceServiceRequest: {exc}") from None
    else:
        raise UnsupportedEncoding(f"unsupported content type {content_type!r} (use {PROTOBUF} or {JSON})")
    return request


_SCALARS: Final = ("string_value", "int_value", "double_value", "bool_value")


def _value(v: AnyValue) -> object:
    which = v.WhichOneof("value")
    if which == "array_value":  # e.g. gen_ai.response.finish_reasons: its scalar items
        return tuple(getattr(x, w) for x in v.array_value.values if (w := x.WhichOneof("value")) in _SCALARS)
    return getattr(v, which) if which in _SCALARS else None


def attributes(kvs: Any) -> dict[str, object]:
    """OTLP ``KeyValue`` list -> dict of scalar values and tuples of an array's scalars (maps and
    bytes are dropped)."""
    out: dict[str, object] = {}
    kv: KeyValue
    for kv in kvs:
        out[kv.key] = _value(kv.value)
    return out


def _resource_spans(rs: ResourceSpans, where: str, keys: TenantKeys | None) -> Iterator[ServerSpan | None]:
    service = attributes(rs.resource.attributes).get(SERVICE_NAME)
    service_name = service if isinstance(service, str) else None
    for i, scope in enumerate(rs.scope_spans):
        for j, span in enumerate(scope.spans):
            attrs = attributes(span.attributes)
            if not is_request_span(span.name, attrs):
                yield None
                continue
            at = f"{where}.scope_spans[{i}].spans[{j}]"
            try:
                times = span.start_time_unix_nano, span.end_time_unix_nano
                failed = span.status.code == Status.STATUS_CODE_ERROR
                decoded = server_span(
                    span.trace_id, span.span_id, span.name, *times, attrs, service_name, failed, keys
                )
            except OtlpError as exc:
                raise OtlpError(f"{at}: {exc}") from None
            yield validated(decoded, at)


def spans(request: ExportTraceServiceRequest, keys: TenantKeys | None = None) -> Iterator[ServerSpan | None]:
    """Each span of the request in order: a ServerSpan for ``llm_request`` and GenAI-convention
    spans (:func:`~monitor.traces.span.is_request_span`), None for any other.

    OtlpError naming the span (``resource_spans[i].scope_spans[j].spans[k]``) and the field when an
    kept span has an invalid id or a value its ``server_spans`` column cannot hold.
    """
    for i, rs in enumerate(request.resource_spans):
        yield from _resource_spans(rs, f"resource_spans[{i}]", keys)


def parse_request(
    body: bytes, content_type: str | None, content_encoding: str | None = None, keys: TenantKeys | None = None
) -> Batch:
    """Decode one OTLP/HTTP traces request body; OtlpError (nothing kept) when any of it is malformed.
    ``keys``: the attributes each span's tenant and priority are read from."""
    if media_type(content_encoding) == "gzip":
        body = gunzip(body)
    elif content_encoding and media_type(content_encoding) != "identity":
        raise UnsupportedEncoding(f"unsupported content encoding {content_encoding!r}")
    if len(body) > MAX_BODY_BYTES:
        raise OtlpError(f"body of {len(body)} bytes exceeds {MAX_BODY_BYTES}")
    decoded = list(spans(decode(body, content_type), keys))
    kept = tuple(s for s in decoded if s is not None)
    return Batch(kept, len(decoded) - len(kept))
