"""``M3MonMaintenanceInProgress``: an informational alert while a maintenance occurrence holds.

It reads the boundaries the monitor publishes (:mod:`monitor.maintenance.metrics`) exactly as the
SLO rules do (``start < time() <= end``), one alert per window, class and endpoint. It carries
severity ``info`` (no pager, no chat route: only the monitor's receiver records it) and exists to
drive Alertmanager's inhibition (:mod:`monitor.generate.alertmanager`): while it fires with
``whole_class="true"`` the class's burn alerts are held back; with ``whole_endpoint="true"`` every
alert naming the endpoint is. The SLIs themselves already leave the maintenance events out.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.rules import Alert, Group
from monitor.model import Model


def maintenance_alert(model: Model) -> Alert:
    sel = q.monitor_selector(model.alerting)
    return Alert(
        name=cv.ALERT_MAINTENANCE,
        expr=f"{cv.MAINTENANCE_START}{sel} < time()\nand\n{cv.MAINTENANCE_END}{sel} >= time()",
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
