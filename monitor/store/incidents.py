"""Incidents: from Alertmanager webhooks (payload version 4), and derived from stored evaluations.

Each alert of a webhook becomes one ``incidents`` row keyed by (fingerprint, startsAt); a later
webhook for the same alert updates its status and end. The request class and SLO come from the
alert's ``class`` and ``slo`` labels when it has them.

Without Alertmanager the store still knows when an SLO burned: every stored evaluation carries the
burn-rate status (``burning`` with a ``page`` or ``ticket`` severity, docs/slo-events.md §3).
:func:`derive_burn_incidents` turns runs of burning evaluations into :class:`BurnIncident` records
(read with :func:`monitor.store.queries.burn_incidents`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


#: One burning evaluation: (slo_id, class, SLO name, evaluated_at, severity, 1h burn rate).
Burning = tuple[str, str, str, float, str | None, float | None]
#: A derived incident whose evaluations stop (the monitor was down) ends this long after its last
#: burning evaluation instead of at a later evaluation that may come hours afterwards.
BURN_GAP = 3600.0


@dataclass(frozen=True)
class BurnIncident:
    """A stretch during which an SLO's stored evaluations said ``burning``: an incident derived
    from the store's own burn-rate conditions (no Alertmanager needed)."""

    slo_id: str
    request_class: str
    slo: str
    severity: str  # "page" when any of its evaluations was page-level, else theirs ("ticket")
    starts_at: float  # the first burning evaluation
    ends_at: float | None  # the first evaluation after it that was not burning; None: still burning
    peak_burn: float | None  # highest 1h burn rate among its burning evaluations
    evaluations: int  # burning evaluations it spans


def derive_burn_incidents(
    burning: Sequence[Burning],
    calm: Mapping[str, Sequence[float]],
    until: float,
    gap: float = BURN_GAP,
) -> list[BurnIncident]:
    """Group burning evaluations into incidents.

    ``burning``: (slo_id, class, slo name, evaluated_at, severity, 1h burn rate) of every burning
    evaluation, any order; ``calm``: per SLO, the instants of its evaluations that were not
    burning; ``until``: the last instant the caller looks at. Two burning evaluations of one SLO
    belong to the same incident unless a calm evaluation lies between them or they are more than
    ``gap`` apart. An incident ends at the first calm evaluation after it (at most ``gap`` after its
    last burning one); without one it is still burning at ``until`` (``ends_at`` None) unless its
    last burning evaluation is more than ``gap`` before ``until``.
    """
    by_slo: dict[str, list[Burning]] = defaultdict(list)
    for row in burning:
        by_slo[row[0]].append(row)
    out = []
    for slo_id, rows in by_slo.items():
        rows.sort(key=lambda r: r[3])
        quiet = sorted(calm.get(slo_id, ()))
        run = [rows[0]]
        for row in rows[1:]:
            prev = run[-1][3]
            if row[3] - prev > gap or bisect_right(quiet, prev) != bisect_right(quiet, row[3]):
                out.append(_incident(run, quiet, until, gap))
                run = []
            run.append(row)
        out.append(_incident(run, quiet, until, gap))
    return sorted(out, key=lambda i: (i.starts_at, i.slo_id))


def _incident(
    run: Sequence[Burning],
    quiet: Sequence[float],
    until: float,
    gap: float,
) -> BurnIncident:
    last = run[-1][3]
    i = bisect_right(quiet, last)
    end: float | None = quiet[i] if i < len(quiet) else None
    if (end is not None and end - last > gap) or (end is None and until - last > gap):
        end = last + gap
    burns = [r[5] for r in run if r[5] is not None]
    severity = "page" if any(r[4] == "page" for r in run) else run[0][4] or "ticket"
    slo_id, cls, name, start = run[0][:4]
    return BurnIncident(slo_id, cls, name, severity, start, end, max(burns, default=None), len(run))
