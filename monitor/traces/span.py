"""One request as a server or gateway saw it: a vLLM ``llm_request`` span, or a GenAI-convention span.

Spans from other sources that follow the OpenTelemetry GenAI conventions (v1.37: a
``gen_ai.operation.name`` attribute; SGLang, an agent gateway) are kept too: their
``gen_ai.usage.input_tokens`` / ``output_tokens`` are the token counts, ``gen_ai.response.id`` the
request id, their duration the e2e and ``gen_ai.response.time_to_first_chunk`` (the inference
span's streaming first-chunk time, seconds from the request's issue) the TTFT; the queue, prefill
and decode parts stay empty unless the ``gen_ai.latency.*`` attributes are sent.

vLLM (``--otlp-traces-endpoint``) exports one SERVER span per finished request, parented on the
client's W3C ``traceparent``; its ``gen_ai.latency.*`` attributes are seconds, its
``gen_ai.usage.*`` attributes token counts. A :class:`ServerSpan` keeps those numbers with the
span's identity so it can be joined to the probe that sent the request (by ``trace_id``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from monitor.errors import M3MonError

#: vLLM's per-request span (kept, with every span following the GenAI conventions).
SERVER_SPAN_NAME: Final = "llm_request"

#: ServerSpan field -> vLLM span attribute (seconds).
LATENCY_ATTRIBUTES: Final = {
    "queue": "gen_ai.latency.time_in_queue",
    "ttft": "gen_ai.latency.time_to_first_token",
    "prefill": "gen_ai.latency.time_in_model_prefill",
    "decode": "gen_ai.latency.time_in_model_decode",
    "inference": "gen_ai.latency.time_in_model_inference",
    "e2e": "gen_ai.latency.e2e",
}
PROMPT_TOKENS: Final = "gen_ai.usage.prompt_tokens"
COMPLETION_TOKENS: Final = "gen_ai.usage.completion_tokens"
REQUEST_ID: Final = "gen_ai.request.id"
SERVICE_NAME: Final = "service.name"
#: GenAI semantic-convention attributes (v1.37) of spans from other sources (SGLang, gateways).
GENAI_OPERATION: Final = "gen_ai.operation.name"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
RESPONSE_ID: Final = "gen_ai.response.id"
TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
#: OpenTelemetry's ``error.type`` (semantic conventions: set on a failed operation, e.g. ``429``).
ERROR_TYPE: Final = "error.type"
#: GenAI conventions: why the model stopped, one per choice (a string array, e.g. ``["stop"]``; an
#: aborted request's ``abort``). vLLM's ``llm_request`` does not carry it (0.10.2 ... 0.33).
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
#: Attribute of the monitor's own probe spans, which are never a server's view.
PROBE_MARK: Final = "m3mon.probe.kind"


def is_request_span(name: str, attributes: Mapping[str, object]) -> bool:
    """vLLM's ``llm_request`` span, or any span following the GenAI conventions (it names its
    ``gen_ai.operation.name``) that is not one of the monitor's own probe spans."""
    if PROBE_MARK in attributes:
        return False
    return name == SERVER_SPAN_NAME or isinstance(attributes.get(GENAI_OPERATION), str)


#: Longest tenant id kept (a longer one is cut: it only ever becomes a label when configured).
TENANT_MAX: Final = 128


@dataclass(frozen=True)
class TenantKeys:
    """Span attributes naming a request's tenant (the first present wins) and its priority."""

    tenant: tuple[str, ...] = ()
    priority: str | None = None

    def read(self, attributes: Mapping[str, object]) -> tuple[str | None, float | None]:
        tenant = next((v for k in self.tenant if isinstance(v := attributes.get(k), str) and v), None)
        tenant = tenant.replace("\x00", "") if tenant else None  # a label may be stored: no NUL
        priority = _number(attributes.get(self.priority)) if self.priority else None
        if priority is not None and not math.isfinite(priority):
            priority = None
        return (tenant[:TENANT_MAX] if tenant else None), priority


class OtlpError(M3MonError):
    """An OTLP request body that cannot be read; nothing of it is kept."""


@dataclass(frozen=True)
class ServerSpan:
    """One kept span (``llm_request`` or GenAI): identity, wall-clock start/end (Unix seconds), latencies."""

    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    name: str
    start: float
    end: float
    queue: float | None = None
    ttft: float | None = None
    prefill: float | None = None
    decode: float | None = None
    inference: float | None = None
    e2e: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    request_id: str | None = None
    service_name: str | None = None
    finish_reason: str | None = None  # its distinct finish reasons, comma-joined (e.g. ``abort``)
    error_type: str | None = (
        None  # set on a failed attempt (``error.type``, or ``error`` for an ERROR status)
    )
    tenant: str | None = (
        None  # the tenant id its attributes name (:class:`TenantKeys`); not stored (its label is)
    )
    priority: float | None = None  # its request priority (:class:`TenantKeys`); not stored
    #: the tenant *label* the real-traffic SLOs gave it (:class:`~monitor.traces.tenants.TenantLabels`:
    #: a named tenant, a top tenant or ``other``); stored, None when it was not judged as traffic
    tenant_label: str | None = None

    @property
    def has_server_view(self) -> bool:
        """vLLM's own parts of the request: queue, prefill or decode."""
        return any(v is not None for v in (self.queue, self.prefill, self.decode))

    def to_row(self) -> dict[str, Any]:
        """The ``server_spans`` row (column names are the field names, times renamed)."""
        return {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "name": self.name,
            "start_time": self.start,
            "end_time": self.end,
            "queue": self.queue,
            "ttft": self.ttft,
            "prefill": self.prefill,
            "decode": self.decode,
            "inference": self.inference,
            "e2e": self.e2e,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "request_id": self.request_id,
            "service_name": self.service_name,
            "error_type": self.error_type,
            "finish_reason": self.finish_reason,
            "tenant": self.tenant_label,
        }


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _count(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number.is_integer() and number >= 0 else None


def finish_reasons(value: object) -> str | None:
    """The finish reasons of ``gen_ai.response.finish_reasons`` (an array, or one string), distinct
    in order of appearance, comma-joined; None when absent or not text."""
    items = (value,) if isinstance(value, str) else value if isinstance(value, tuple | list) else ()
    found = dict.fromkeys(v.strip() for v in items if isinstance(v, str) and v.strip())
    return ",".join(found) or None


def _hex_id(raw: bytes, size: int, what: str) -> str:
    if len(raw) != size or not any(raw):
        raise OtlpError(f"span {what} must be {size} non-zero bytes, got {raw.hex() or 'none'}")
    return raw.hex()


def server_span(
    trace_id: bytes,
    span_id: bytes,
    name: str,
    start_ns: int,
    end_ns: int,
    attributes: Mapping[str, object],
    service_name: str | None,
    failed: bool = False,
    keys: TenantKeys | None = None,
) -> ServerSpan:
    """Build a span from decoded OTLP fields; ids must be valid, attributes of the wrong type are None."""
    request_id = attributes.get(REQUEST_ID, attributes.get(RESPONSE_ID))
    error = attributes.get(ERROR_TYPE)
    error_type = error if isinstance(error, str) and error else ("error" if failed else None)
    latencies = {field: _number(attributes.get(attr)) for field, attr in LATENCY_ATTRIBUTES.items()}
    tenant, priority = keys.read(attributes) if keys else (None, None)
    if latencies["ttft"] is None:
        latencies["ttft"] = _number(attributes.get(TIME_TO_FIRST_CHUNK))  # a GenAI-convention span
    if name != SERVER_SPAN_NAME and latencies["e2e"] is None and end_ns >= start_ns:
        latencies["e2e"] = (end_ns - start_ns) / 1e9  # a GenAI-convention span: its duration
    return ServerSpan(
        trace_id=_hex_id(trace_id, 16, "trace_id"),
        span_id=_hex_id(span_id, 8, "span_id"),
        name=name,
        start=start_ns / 1e9,
        end=end_ns / 1e9,
        prompt_tokens=_count(attributes.get(PROMPT_TOKENS, attributes.get(INPUT_TOKENS))),
        completion_tokens=_count(attributes.get(COMPLETION_TOKENS, attributes.get(OUTPUT_TOKENS))),
        request_id=request_id if isinstance(request_id, str) else None,
        service_name=service_name,
        error_type=error_type,
        finish_reason=finish_reasons(attributes.get(FINISH_REASONS)),
        tenant=tenant,
        priority=priority,
        tenant_label=None,  # given when the real-traffic SLOs judge it
        **latencies,
    )
