"""Decoded spans checked against the ``server_spans`` columns before anything is stored.

A span whose field cannot be stored as it is (a ``gen_ai.request.id`` longer than the column's
200 characters, a NUL byte, which PostgreSQL text cannot hold, a token count beyond a 32-bit
integer) makes the whole export request a 400 that names the field: the sender learns what is
wrong and the store never sees a write it would refuse.
"""

from __future__ import annotations

import math
from typing import Annotated, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from monitor.traces.span import (
    COMPLETION_TOKENS,
    FINISH_REASONS,
    PROMPT_TOKENS,
    REQUEST_ID,
    SERVICE_NAME,
    OtlpError,
    ServerSpan,
)
from monitor.web.messages import field_message

#: ``server_spans`` column sizes (monitor/store/tables.py).
REQUEST_ID_MAX: Final = 200
SERVICE_NAME_MAX: Final = 200
NAME_MAX: Final = 100
ERROR_TYPE_MAX: Final = 100
FINISH_REASON_MAX: Final = 100
INT32_MAX: Final = 2**31 - 1
#: ServerSpan field -> the OTLP field or attribute it came from (named in error messages).
SOURCE: Final = {
    "request_id": f"attributes[{REQUEST_ID}]",
    "service_name": f"resource.attributes[{SERVICE_NAME}]",
    "prompt_tokens": f"attributes[{PROMPT_TOKENS}]",
    "completion_tokens": f"attributes[{COMPLETION_TOKENS}]",
    "error_type": "attributes[error.type]",
    "finish_reason": f"attributes[{FINISH_REASONS}]",
    "start": "start_time_unix_nano",
    "end": "end_time_unix_nano",
}


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL bytes")
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


Text = Annotated[str, AfterValidator(_no_nul)]
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]


class StoredSpan(BaseModel):
    """The ``server_spans`` row a span becomes: types and sizes the columns hold."""

    model_config = ConfigDict(strict=True, frozen=True)
    trace_id: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]
    span_id: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    name: Annotated[Text, Field(max_length=NAME_MAX)]
    start: Annotated[float, AfterValidator(_finite), Field(ge=0)]
    end: Annotated[float, AfterValidator(_finite), Field(ge=0)]
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    request_id: Annotated[Text, Field(max_length=REQUEST_ID_MAX)] | None = None
    service_name: Annotated[Text, Field(max_length=SERVICE_NAME_MAX)] | None = None
    error_type: Annotated[Text, Field(max_length=ERROR_TYPE_MAX)] | None = None
    finish_reason: Annotated[Text, Field(max_length=FINISH_REASON_MAX)] | None = None


def validated(span: ServerSpan, where: str) -> ServerSpan:
    """``span`` unchanged when every field fits its column; OtlpError naming the field otherwise."""
    fields = {name: getattr(span, name) for name in StoredSpan.model_fields}
    try:
        StoredSpan.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0])
        message = field_message(err)
        raise OtlpError(f"{where}.{SOURCE.get(field, field)}: {message}") from None
    return span
