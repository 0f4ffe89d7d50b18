"""Alertmanager routing: pages to the pager webhook, tickets to chat, everything to the monitor.

Alerts are grouped per alert name, class, SLO and endpoint (:data:`GROUP_BY`), so each
endpoint's operational page and each SLO's burn alert is its own notification, sent
:data:`GROUP_WAIT` after it first fires. Both severity routes ``continue`` so the catch-all
route then hands every alert to the monitor's
``/alertmanager`` receiver, which records alert events next to the SLO history. Tickets of an SLO
are inhibited while the same SLO (same ``class`` and ``slo``) pages; burn and endpoint alerts are
inhibited during maintenance (:mod:`monitor.generate.maintenance_rules`). With ``exporter.credentials``
the monitor's webhook authenticates (``http_config.basic_auth`` with a ``password_file``, and the
CA of the monitor's TLS certificate when one is configured).
"""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate.prometheus_config import monitor_client
from monitor.model import Model

MONITOR_RECEIVER = "m3mon"
#: One notification group per alert name, class, SLO and endpoint: an SLO alert (no endpoint label)
#: groups per class and SLO, an operational alert per endpoint. (Without ``endpoint`` every
#: endpoint's page joined one group, and a second endpoint's page waited for its group_interval.)
GROUP_BY = ("alertname", cv.L_CLASS, cv.L_SLO, cv.L_ENDPOINT)
#: A new group is sent after GROUP_WAIT; alerts joining an existing group wait for its next
#: GROUP_INTERVAL flush; a group still firing is sent again after REPEAT_INTERVAL.
GROUP_WAIT, GROUP_INTERVAL, REPEAT_INTERVAL = "30s", "5m", "4h"


def _matchers(labels: tuple[tuple[str, str], ...]) -> list[str]:
    return [f'{k}="{v}"' for k, v in labels]


def _receiver(name: str, url: str | None, http_config: dict[str, Any] | None = None) -> dict[str, Any]:
    if url is None:
        return {"name": name}
    webhook: dict[str, Any] = {"url": url, "send_resolved": True}
    if http_config:
        webhook["http_config"] = http_config
    return {"name": name, "webhook_configs": [webhook]}


#: Alerts a maintenance covering a class on every endpoint holds back: those about its burn.
MAINTENANCE_INHIBITS = (
    cv.ALERT_BURN_PAGE,
    cv.ALERT_BURN_TICKET,
    cv.ALERT_EXHAUSTION_SOON,
    cv.ALERT_METRIC_ABSENT,
)


def _maintenance_inhibitions() -> list[dict[str, Any]]:
    """While ``M3MonMaintenanceInProgress`` fires: the class's burn alerts (window covers the class on
    every endpoint) and every other alert naming the endpoint (window covers all its classes)."""
    source = f'alertname="{cv.ALERT_MAINTENANCE}"'
    return [
        {
            "source_matchers": [source, f'{cv.L_WHOLE_CLASS}="true"'],
            "target_matchers": [f'alertname=~"{"|".join(MAINTENANCE_INHIBITS)}"'],
            "equal": [cv.L_CLASS],
        },
        {
            "source_matchers": [source, f'{cv.L_WHOLE_ENDPOINT}="true"'],
            "target_matchers": [f'alertname!="{cv.ALERT_MAINTENANCE}"', f'{cv.L_ENDPOINT}=~".+"'],
            "equal": [cv.L_ENDPOINT],
        },
    ]


def alertmanager_config(model: Model) -> dict[str, Any]:
    """The alertmanager.yml document for ``model``."""
    a = model.alerting
    page, ticket = _matchers(a.page_labels), _matchers(a.ticket_labels)
    has_slo = f'{cv.L_SLO}=~".+"'
    return {
        "route": {
            "receiver": MONITOR_RECEIVER,
            "group_by": list(GROUP_BY),
            "group_wait": GROUP_WAIT,
            "group_interval": GROUP_INTERVAL,
            "repeat_interval": REPEAT_INTERVAL,
            "routes": [
                {"receiver": a.page_receiver, "matchers": page, "continue": True},
                {"receiver": a.ticket_receiver, "matchers": ticket, "continue": True},
                {"receiver": MONITOR_RECEIVER, "group_wait": "0s", "group_interval": "1m"},
            ],
        },
        "receivers": [
            _receiver(a.page_receiver, a.page_webhook),
            _receiver(a.ticket_receiver, a.ticket_webhook),
            _receiver(MONITOR_RECEIVER, a.monitor_receiver_url, monitor_client(model)),
        ],
        "inhibit_rules": [
            {
                "source_matchers": [*page, has_slo],
                "target_matchers": [*ticket, has_slo],
                "equal": [cv.L_CLASS, cv.L_SLO],
            },
            *_maintenance_inhibitions(),
        ],
    }
