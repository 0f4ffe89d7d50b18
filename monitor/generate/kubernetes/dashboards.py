"""Dashboards as ConfigMaps for the Grafana sidecar of kube-prometheus-stack.

The sidecar loads every ConfigMap labelled ``grafana_dashboard: "1"`` (the chart's
``grafana.sidecar.dashboards.label``/``labelValue`` defaults) from the namespaces it searches;
each holds one dashboard of :func:`monitor.generate.dashboards.all_dashboards`, the same JSON the
default target writes to ``dashboards/<uid>.json``. The ``grafana_folder`` annotation puts them in
one folder when the sidecar's ``folderAnnotation`` is set to it.
"""

from __future__ import annotations

import json
from typing import Any

from monitor.generate.dashboards import all_dashboards
from monitor.generate.kubernetes.common import dns_name, meta, part_of
from monitor.model import Model

SIDECAR_LABEL = "grafana_dashboard"
SIDECAR_VALUE = "1"
FOLDER_ANNOTATION = "grafana_folder"
FOLDER = "m3mon"


def dashboard_json(dashboard: dict[str, Any]) -> str:
    """The text of ``dashboards/<uid>.json`` in the default target."""
    return json.dumps(dashboard, indent=2, sort_keys=True) + "\n"


def dashboard_config_maps(model: Model) -> dict[str, dict[str, Any]]:
    """``{uid: ConfigMap}``."""
    out = {}
    for uid, dashboard in all_dashboards(model).items():
        labels = {**part_of(), SIDECAR_LABEL: SIDECAR_VALUE}
        out[uid] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(dns_name(uid), labels, annotations={FOLDER_ANNOTATION: FOLDER}),
            "data": {f"{uid}.json": dashboard_json(dashboard)},
        }
    return out
