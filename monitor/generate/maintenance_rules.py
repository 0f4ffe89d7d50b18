"""``M3MonMaintenanceInProgress``: an informational alert while a maintenance occurrence holds.

It reads the boundaries the monitor publishes (:mod:`monitor.maintenance.metrics`) exactly as the
SLO rules do (``start < time() <= end``, each boundary's last value within
:data:`~monitor.conventions.MAINTENANCE_MEMORY`, so a failed scrape of the monitor does not resolve
it and release the inhibition), one alert per window, class and endpoint. It carries
severity ``info`` (no pager, no chat route: only the monitor's receiver records it) and exists to
drive Alertmanager's inhibition (:mod:`monitor.generate.alertmanager`): while it fires with
``whole_class="true"`` the class's burn alerts are held back; with ``whole_endpoint="true"`` every
alert naming the endpoint is. The SLIs themselves already leave the maintenance events out.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.rules import Alert, Group
from monitor.generate.runbooks import Runbook
from monitor.generate.sli import boundary
from monitor.model import Model


def maintenance_alert(model: Model) -> Alert:
    sel = q.monitor_selector(model.alerting)
    return Alert(
        name=cv.ALERT_MAINTENANCE,
        expr=f"{boundary(cv.MAINTENANCE_START + sel)} < time()\nand\n"
        f"{boundary(cv.MAINTENANCE_END + sel)} >= time()",
        severity="info",
        summary="Maintenance {{ $labels.maintenance }}: {{ $labels.class }} on {{ $labels.endpoint }}",
        description=(
            "Planned maintenance {{ $labels.maintenance }} is in progress for class {{ $labels.class }} "
            "on endpoint {{ $labels.endpoint }}. Its events count in no SLI; burn alerts of a class "
            "covered on every endpoint, and alerts about an endpoint covered for every class, are inhibited."
        ),
    )


def maintenance_groups(model: Model) -> list[Group]:
    return [Group("m3mon-maintenance", alerts=(maintenance_alert(model),))]


MAINTENANCE_RUNBOOKS = {
    cv.ALERT_MAINTENANCE: Runbook(
        "info",
        "A planned maintenance window from the config or its maintenance file is in progress for this "
        "class on this endpoint. Its events count in no SLI (both the rules and the stored evaluations "
        "leave them out), and while it fires Alertmanager holds back the class's burn alerts (when the "
        "window covers the class on every endpoint) and alerts about the endpoint (when it covers every "
        "class the endpoint serves). Nobody needs to act on it.",
        (
            "`m3mon maintenance list -c monitor.yaml` shows the window, its occurrences and its reason.",
            "Check that the work is really planned for now: a wrong time zone or RRULE excludes real "
            "incidents from the SLOs.",
        ),
        f"{cv.MAINTENANCE_END} - time()",
        "vllm:num_requests_running|vllm:num_requests_waiting",
        (
            "Nothing while the work is on plan.",
            "If the work ended early, shorten the window in the maintenance file and reload the monitor "
            "(`kill -HUP` or `POST /-/reload`): events count again from the next minute.",
            "If the window was wrong, fix it the same way; events already excluded stay excluded (the "
            "rules cannot rewrite the past, so the store does not either).",
        ),
    ),
}
