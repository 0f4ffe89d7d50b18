"""The Alertmanager webhook (payload version 4), validated at the edge before anything is stored.

Types are strict (labels and annotations are strings, times RFC 3339), text holds no NUL byte
(PostgreSQL text cannot), and every value that lands in an ``incidents`` column fits it:
``fingerprint`` ≤ 64 characters, the ``alertname`` label ≤ 200, ``class`` and ``slo`` ≤ 100,
``severity`` ≤ 20 (monitor/store/tables.py). A payload that breaks any of this is refused as a
whole with :class:`WebhookError` naming the field (``alerts[3].labels.class``); fields the store
does not keep (``groupKey``, ``externalURL``...) are ignored, as Alertmanager adds some over time.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from monitor.conventions import L_CLASS, L_SLO
from monitor.errors import StoreError
from monitor.store.incidents import parse_time
from monitor.web.messages import field_message

#: Label -> the incidents column it fills and that column's size.
LABEL_COLUMNS: Final = {"alertname": 200, L_CLASS: 100, L_SLO: 100, "severity": 20}
FINGERPRINT_MAX: Final = 64
MAX_ALERTS: Final = 10_000
MAX_LABELS: Final = 200
VALUE_MAX: Final = 16_384


class WebhookError(ValueError):
    """A payload refused at the edge; ``field`` names where (``alerts[0].fingerprint``)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL bytes")
    return value


def _time(value: str) -> str:
    try:
        parse_time(value)
    except StoreError:
        raise ValueError(f"expected an RFC 3339 time, got {value[:40]!r}") from None
    return value


Text = Annotated[str, AfterValidator(_no_nul), Field(max_length=VALUE_MAX)]
LabelName = Annotated[str, Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$", max_length=200)]
Time = Annotated[str, AfterValidator(_time), Field(max_length=64)]


class AlertIn(BaseModel):
    """One alert of the webhook, as the store keeps it."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    status: Literal["firing", "resolved"]
    labels: Annotated[dict[LabelName, Text], Field(max_length=MAX_LABELS)] = {}
    annotations: Annotated[dict[LabelName, Text], Field(max_length=MAX_LABELS)] = {}
    startsAt: Time
    endsAt: Time | None = None
    fingerprint: Annotated[str, Field(pattern=r"^[!-~]+$", min_length=1, max_length=FINGERPRINT_MAX)]


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    version: Literal["4"]
    alerts: Annotated[list[AlertIn], Field(max_length=MAX_ALERTS)]


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if part == "[key]":
            out += " (the name)"
        else:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(body)"


def _check_alerts(alerts: list[AlertIn]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for i, alert in enumerate(alerts):
        if parse_time(alert.startsAt) is None:
            raise WebhookError(f"alerts[{i}].startsAt", "must be a real time, not the zero time")
        for label, size in LABEL_COLUMNS.items():
            if len(alert.labels.get(label, "")) > size:
                raise WebhookError(f"alerts[{i}].labels.{label}", f"at most {size} characters")
        key = (alert.fingerprint, alert.startsAt)
        if key in seen:
            raise WebhookError(f"alerts[{i}]", f"same fingerprint and startsAt as alerts[{seen[key]}]")
        seen[key] = i


def parse_webhook(body: bytes) -> dict[str, Any]:
    """The payload, as :func:`monitor.store.incidents.incident_rows` reads it; WebhookError if bad."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise WebhookError("(body)", f"not JSON: {str(exc)[:120]}") from None
    try:
        webhook = WebhookIn.model_validate(document)
    except ValidationError as exc:
        err = exc.errors()[0]
        message = field_message(err)
        raise WebhookError(_where(tuple(err["loc"])), message) from None
    _check_alerts(webhook.alerts)
    return {"alerts": [alert.model_dump() for alert in webhook.alerts]}
