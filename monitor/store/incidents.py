"""Incidents from Alertmanager webhooks (payload version 4).

Each alert of a webhook becomes one ``incidents`` row keyed by (fingerprint, startsAt); a later
webhook for the same alert updates its status and end. The request class and SLO come from the
alert's ``class`` and ``slo`` labels when it has them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from monitor.conventions import L_CLASS, L_SLO
from monitor.errors import StoreError


def parse_time(value: object) -> float | None:
    """Unix seconds from an Alertmanager RFC 3339 time; None for the zero time or nothing."""
    if not isinstance(value, str) or not value or value.startswith("0001-01-01"):
        return None
    text = value.replace("Z", "+00:00")
    if "." in text:  # Alertmanager writes nanoseconds; Python takes at most microseconds
        head, _, rest = text.partition(".")
        digits = "".join(c for c in rest if c.isdigit())
        text = f"{head}.{digits[:6]}{rest[len(digits) :]}"
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise StoreError(f"alertmanager webhook: bad time {value!r}") from None


def incident_rows(payload: dict[str, Any], received_at: float) -> list[dict[str, Any]]:
    """Rows for the ``incidents`` table from one webhook payload; StoreError when malformed."""
    alerts = payload.get("alerts")
    if not isinstance(alerts, list):
        raise StoreError("alertmanager webhook: no 'alerts' list")
    rows = []
    for alert in alerts:
        labels = {str(k): str(v) for k, v in (alert.get("labels") or {}).items()}
        starts = parse_time(alert.get("startsAt"))
        fingerprint = alert.get("fingerprint")
        if starts is None or not fingerprint:
            raise StoreError("alertmanager webhook: alert without fingerprint or startsAt")
        status = "resolved" if alert.get("status") == "resolved" else "firing"
        rows.append(
            {
                "fingerprint": str(fingerprint),
                "alertname": labels.get("alertname", ""),
                "status": status,
                "starts_at": starts,
                "ends_at": parse_time(alert.get("endsAt")) if status == "resolved" else None,
                "labels": labels,
                "annotations": {str(k): str(v) for k, v in (alert.get("annotations") or {}).items()},
                "request_class": labels.get(L_CLASS),
                "slo": labels.get(L_SLO),
                "severity": labels.get("severity"),
                "updated_at": received_at,
            }
        )
    return rows
