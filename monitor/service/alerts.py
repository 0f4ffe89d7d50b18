"""Alertmanager webhook payloads (version 4) turned into incident records.

Alertmanager posts ``{"version": "4", "status": ..., "alerts": [...]}`` to each webhook
receiver; every alert carries ``status`` (firing/resolved), ``labels``, ``annotations``,
``startsAt``, ``endsAt`` and a ``fingerprint``. This module only validates and converts; storing
is the store's job.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from monitor.conventions import L_CLASS, L_SLO


class PayloadError(ValueError):
    """The webhook body is not an Alertmanager v4 payload; nothing from it is recorded."""


@dataclass(frozen=True)
class AlertEvent:
    fingerprint: str
    alertname: str
    status: str  # "firing" or "resolved"
    starts_at: float  # Unix seconds
    ends_at: float | None  # None while firing
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def request_class(self) -> str | None:
        return self.labels.get(L_CLASS)

    @property
    def slo(self) -> str | None:
        return self.labels.get(L_SLO)


def _time(value: Any) -> float | None:
    """Unix seconds from an RFC 3339 time; Alertmanager's zero time (year 1) means unset."""
    if not isinstance(value, str) or not value or value.startswith("0001-01-01"):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise PayloadError(f"bad timestamp {value[:40]!r}") from exc


def _strings(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise PayloadError(f"{what} must be a mapping of strings")
    return {str(k): v for k, v in value.items()}


def alert_events(payload: Any) -> Iterator[AlertEvent]:
    """Yield one :class:`AlertEvent` per alert in a webhook payload; raise PayloadError if malformed."""
    if not isinstance(payload, dict) or not isinstance(payload.get("alerts"), list):
        raise PayloadError("expected an Alertmanager webhook payload with an 'alerts' list")
    for raw in payload["alerts"]:
        if not isinstance(raw, dict):
            raise PayloadError("each alert must be an object")
        labels = _strings(raw.get("labels", {}), "labels")
        status = raw.get("status")
        if status not in ("firing", "resolved"):
            raise PayloadError(f"alert status must be firing or resolved, got {status!r}")
        starts = _time(raw.get("startsAt"))
        if starts is None:
            raise PayloadError("alert has no startsAt")
        yield AlertEvent(
            fingerprint=str(raw.get("fingerprint") or sorted(labels.items())),
            alertname=labels.get("alertname", "unknown"),
            status=status,
            starts_at=starts,
            ends_at=_time(raw.get("endsAt")) if status == "resolved" else None,
            labels=labels,
            annotations=_strings(raw.get("annotations", {}), "annotations"),
        )
