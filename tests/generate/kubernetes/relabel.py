"""An oracle of Prometheus relabelling (docs: configuration/#relabel_config), and the relabellings
prometheus-operator puts before a ServiceMonitor's or PodMonitor's own (pkg/prometheus/promcfg.go,
v0.93: namespace/service/pod/container, ``job``, ``endpoint`` from the port name).

Rules are dicts in either spelling: Prometheus' (``source_labels``) or the CRD's (``sourceLabels``).
"""

from __future__ import annotations

import re
from typing import Any

Labels = dict[str, str]


def _get(rule: dict[str, Any], snake: str, camel: str, default: Any) -> Any:
    return rule.get(snake, rule.get(camel, default))


def _expand(template: str, match: re.Match[str]) -> str:
    """Go's ``$1`` / ``${1}`` expansion (a missing group is empty)."""

    def group(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return (match.group(int(name)) if name.isdigit() else match.group(name)) or ""

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", group, template)


def apply(rules: list[dict[str, Any]], labels: Labels) -> Labels | None:
    """The labels after ``rules``; None when a rule drops the target (or series)."""
    out = dict(labels)
    for rule in rules:
        action = str(rule.get("action", "replace")).lower()
        regex = re.compile(str(rule.get("regex", "(.*)")))
        if action in ("labeldrop", "labelkeep"):
            keep = action == "labelkeep"
            out = {k: v for k, v in out.items() if bool(regex.fullmatch(k)) == keep}
            continue
        sources = _get(rule, "source_labels", "sourceLabels", [])
        value = _get(rule, "separator", "separator", ";").join(out.get(s, "") for s in sources)
        match = regex.fullmatch(value)
        if (action == "keep" and match is None) or (action == "drop" and match is not None):
            return None
        if action == "replace" and match is not None:
            target = _get(rule, "target_label", "targetLabel", None)
            new = _expand(str(rule.get("replacement", "$1")), match)
            if new:
                out[target] = new
            else:
                out.pop(target, None)
        if action not in ("keep", "drop", "replace"):
            raise NotImplementedError(action)
    return out


def target_labels(labels: Labels | None) -> Labels | None:
    """What the target keeps: every label not starting with ``__``."""
    return None if labels is None else {k: v for k, v in labels.items() if not k.startswith("__")}


def service_monitor_prefix(port_name: str) -> list[dict[str, Any]]:
    """What the operator relabels before a ServiceMonitor endpoint's ``relabelings`` (on ``port``)."""
    return [
        {"action": "keep", "source_labels": ["__meta_kubernetes_endpoint_port_name"], "regex": port_name},
        *_pod_meta(),
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job", "replacement": "${1}"},
        {"target_label": "endpoint", "replacement": port_name},
    ]


def pod_monitor_prefix(namespace: str, name: str) -> list[dict[str, Any]]:
    """What the operator relabels before a PodMonitor endpoint's (no ``port``) ``relabelings``."""
    return [*_pod_meta(), {"target_label": "job", "replacement": f"{namespace}/{name}"}]


def _pod_meta() -> list[dict[str, Any]]:
    return [
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
    ]
