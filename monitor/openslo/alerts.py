"""Burn alerts as OpenSLO ``AlertPolicy``/``AlertCondition`` documents, and back.

m3mon has one alerting scheme: the multi-window burn alerts of
:data:`monitor.conventions.BURN_ALERTS`. Each row is one policy with one ``burnrate`` condition
(OpenSLO allows one condition per policy): ``threshold`` is the row's burn factor at the SLO's
period (14.4 for 2 % of a 30d budget in 1h), ``lookbackWindow`` its long window and
``alertAfter`` its short window (also in the ``m3mon.dev/short-window`` annotation), ``severity``
``page`` or ``ticket``. An imported condition maps when it names one of those rows; any other
condition would be a second alerting scheme and is refused.
"""

from __future__ import annotations

import math
from typing import Any

from monitor import conventions as cv
from monitor.model import SLO, Model
from monitor.openslo.documents import A_SHORT_WINDOW, API_V1, Document, Problems
from monitor.openslo.durations import format_duration
from monitor.slo import burn

#: OpenSLO severities read as each of m3mon's (OpenSLO leaves the words free).
SEVERITIES = {"page": ("page", "critical"), "ticket": ("ticket", "warning")}


def policy_name(
    row: cv.BurnAlert, period_window: str, page_within: float | None = None, budget: float = 0.0
) -> str:
    """The policy of ``row`` at a period; an SLO with ``page_within`` has its own first page row,
    per error budget (its factor is lower and depends on both: :func:`monitor.slo.burn.factor`)."""
    base = f"m3mon-burn-{row.severity}-{row.long_window}-{row.short_window}-{period_window}"
    if page_within is None or row != burn.first_page_row():
        return base
    objective = f"{(1 - budget) * 100:.10g}".replace(".", "p")
    return f"{base}-within-{format_duration(page_within)}-at-{objective}"


def slo_policy_names(slo: SLO) -> list[str]:
    """The policies an SLO document names, one per burn-alert row."""
    return [policy_name(row, slo.period_window, slo.page_within, slo.budget) for row in cv.BURN_ALERTS]


def target_name(model: Model, severity: str) -> str:
    receiver = model.alerting.page_receiver if severity == "page" else model.alerting.ticket_receiver
    return receiver.replace("_", "-")


def policies(model: Model, period_window: str) -> list[dict[str, Any]]:
    """One AlertPolicy per burn-alert row at ``period_window``, plus the first page row of every
    SLO of that period with ``page_within`` (its own, lower factor)."""
    period = cv.window_seconds(period_window)
    rows = [(row, row.factor(period), policy_name(row, period_window)) for row in cv.BURN_ALERTS]
    first = burn.first_page_row()
    for slo in model.slos:
        if slo.period_window == period_window and slo.page_within is not None:
            name = policy_name(first, period_window, slo.page_within, slo.budget)
            rows.append((first, burn.factor(slo, first), name))
    names: set[str] = set()
    out = []
    for row, factor, name in rows:
        if name in names:  # SLOs with one page_within and objective share their policy
            continue
        names.add(name)
        condition = {
            "kind": "AlertCondition",
            "metadata": {"name": name + "-condition", "annotations": {A_SHORT_WINDOW: row.short_window}},
            "spec": {
                "description": f"{row.budget_share:.0%} of the {period_window} budget spent within "
                f"{row.long_window} (and still burning over {row.short_window})",
                "severity": row.severity,
                "condition": {
                    "kind": "burnrate",
                    "op": "gt",
                    "threshold": factor,
                    "lookbackWindow": row.long_window,
                    "alertAfter": row.short_window,
                },
            },
        }
        out.append(
            {
                "apiVersion": API_V1,
                "kind": "AlertPolicy",
                "metadata": {"name": name},
                "spec": {
                    "description": f"m3mon {row.severity} burn alert ({row.long_window}/{row.short_window})",
                    "alertWhenNoData": False,
                    "alertWhenResolved": True,
                    "alertWhenBreaching": True,
                    "conditions": [condition],
                    "notificationTargets": [{"targetRef": target_name(model, row.severity)}],
                },
            }
        )
    return out


def notification_targets(model: Model) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for severity in ("page", "ticket"):
        name = target_name(model, severity)
        if name not in seen:
            seen.add(name)
            out.append(
                {
                    "apiVersion": API_V1,
                    "kind": "AlertNotificationTarget",
                    "metadata": {"name": name},
                    "spec": {"target": name, "description": f"Alertmanager receiver for {severity} alerts"},
                }
            )
    return out


#: How an imported SLO's burn factors are known: (period, error budget, page_within).
Scheme = tuple[float, float, float | None]


def _row(condition: dict[str, Any], severity: str, scheme: Scheme) -> cv.BurnAlert | None:
    for row in cv.BURN_ALERTS:
        if (
            severity in SEVERITIES[row.severity]
            and condition.get("lookbackWindow") == row.long_window
            and condition.get("alertAfter") == row.short_window
            and isinstance(condition.get("threshold"), int | float)
            and math.isclose(float(condition["threshold"]), burn.factor_of(row, *scheme), rel_tol=1e-6)
        ):
            return row
    return None


def _rows_text(scheme: Scheme) -> str:
    return "; ".join(
        f"{r.severity} {burn.factor_of(r, *scheme):g}x over {r.long_window}/{r.short_window}"
        for r in cv.BURN_ALERTS
    )


def check_condition(
    doc: Document, path: str, spec: dict[str, Any], scheme: Scheme, problems: Problems
) -> None:
    """Refuse a condition that is not one of the burn-alert rows of ``scheme``'s SLO."""
    period = scheme[0]
    condition = spec.get("condition") if isinstance(spec.get("condition"), dict) else {}
    assert isinstance(condition, dict)
    if condition.get("kind") != "burnrate":
        problems.add(
            doc, f"{path}.condition.kind", f"only burnrate conditions map, got {condition.get('kind')!r}"
        )
    elif condition.get("op") not in ("gt", "gte"):
        problems.add(
            doc, f"{path}.condition.op", f"burn alerts fire above a rate (gt), got {condition.get('op')!r}"
        )
    elif _row(condition, str(spec.get("severity", "")), scheme) is None:
        problems.add(
            doc,
            f"{path}.condition",
            f"severity {spec.get('severity')!r}, {condition.get('threshold')}x over "
            f"{condition.get('lookbackWindow')}/{condition.get('alertAfter')} is not one of m3mon's burn "
            f"alerts for a {period / 86400:g}d period ({_rows_text(scheme)})",
        )
