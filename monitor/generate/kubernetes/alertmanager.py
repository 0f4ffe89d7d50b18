"""AlertmanagerConfig (``monitoring.coreos.com/v1alpha1``) from the generated Alertmanager routing.

:func:`monitor.generate.alertmanager.alertmanager_config` is the one source: its route tree,
receivers and inhibit rules are translated key by key (``group_by`` -> ``groupBy``, matcher
strings -> ``{name, value, matchType}``). What the CRD cannot hold is changed so (docs/kubernetes.md):

* the monitor's webhook is its Service inside the cluster, not ``alerting.monitor_receiver_url``;
* the ``password_file`` and ``ca_file`` of its ``http_config`` become references to the
  ``m3mon-client`` Secret (the CRD has no file paths);
* the operator nests this route under the Alertmanager's own root route and, unless the
  Alertmanager sets ``alertmanagerConfigMatcherStrategy: {type: None}``, adds a
  ``namespace="<this namespace>"`` matcher to it and to the inhibit rules.
"""

from __future__ import annotations

import re
from typing import Any

from monitor.errors import GenerateError
from monitor.generate.alertmanager import MONITOR_RECEIVER, alertmanager_config
from monitor.generate.kubernetes.common import (
    CA_KEY,
    NAME,
    SECRET_CLIENT,
    Options,
    meta,
    monitor_url,
    operator_labels,
    secret_key,
    service_host,
    tls,
)
from monitor.model import Model

API_VERSION = "monitoring.coreos.com/v1alpha1"
_MATCHER = re.compile(r'^([a-zA-Z_][a-zA-Z0-9_]*)(=~|!~|!=|=)"(.*)"$')
_ROUTE_KEYS = {"receiver": "receiver", "group_by": "groupBy", "group_wait": "groupWait",
               "group_interval": "groupInterval", "repeat_interval": "repeatInterval",
               "continue": "continue"}  # fmt: skip


def matcher(text: str) -> dict[str, str]:
    """``name="value"`` (or ``=~``, ``!=``, ``!~``) as the CRD's matcher object."""
    m = _MATCHER.match(text)
    if m is None:
        raise GenerateError(f"alertmanager matcher {text!r} has no AlertmanagerConfig form")
    value = m.group(3).replace('\\"', '"').replace("\\\\", "\\")
    return {"name": m.group(1), "value": value, "matchType": m.group(2)}


def _route(route: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {new: route[old] for old, new in _ROUTE_KEYS.items() if old in route}
    if "matchers" in route:
        out["matchers"] = [matcher(m) for m in route["matchers"]]
    if "routes" in route:
        out["routes"] = [_route(r) for r in route["routes"]]
    unknown = set(route) - set(_ROUTE_KEYS) - {"matchers", "routes"}
    if unknown:
        raise GenerateError(f"alertmanager route keys without AlertmanagerConfig form: {sorted(unknown)}")
    return out


def _monitor_http_config(model: Model, options: Options) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if model.credentials is not None:
        out["basicAuth"] = {
            "username": secret_key(SECRET_CLIENT, "username"),
            "password": secret_key(SECRET_CLIENT, "password"),
        }
    if tls(model):
        out["tlsConfig"] = {"ca": {"secret": secret_key(SECRET_CLIENT, CA_KEY)},
                            "serverName": service_host(options)}  # fmt: skip
    return out


def _receiver(model: Model, options: Options, receiver: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": receiver["name"]}
    webhooks = []
    for w in receiver.get("webhook_configs", []):
        hook: dict[str, Any] = {"url": w["url"], "sendResolved": w["send_resolved"]}
        if receiver["name"] == MONITOR_RECEIVER:
            hook["url"] = monitor_url(model, options, "/alertmanager")
            if http := _monitor_http_config(model, options):
                hook["httpConfig"] = http
        webhooks.append(hook)
    if webhooks:
        out["webhookConfigs"] = webhooks
    return out


def _inhibit(rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "sourceMatch": [matcher(m) for m in rule["source_matchers"]],
        "targetMatch": [matcher(m) for m in rule["target_matchers"]],
        "equal": list(rule["equal"]),
    }


def alertmanager_config_object(model: Model, options: Options) -> dict[str, Any]:
    config = alertmanager_config(model)
    receivers: dict[str, dict[str, Any]] = {}
    for r in config["receivers"]:  # the page and ticket receivers may share a name
        receivers.setdefault(r["name"], _receiver(model, options, r))
    return {
        "apiVersion": API_VERSION,
        "kind": "AlertmanagerConfig",
        "metadata": meta(NAME, operator_labels(options)),
        "spec": {
            "route": _route(config["route"]),
            "receivers": list(receivers.values()),
            "inhibitRules": [_inhibit(r) for r in config["inhibit_rules"]],
        },
    }
