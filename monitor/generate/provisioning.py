"""Grafana provisioning files: the Prometheus data source and the dashboard folder provider."""

from __future__ import annotations

from typing import Any

#: UID of the provisioned Prometheus data source; every dashboard's default.
DATASOURCE_UID = "m3mon-prometheus"
DASHBOARD_DIR = "/var/lib/grafana/dashboards/m3mon"


def datasource_provisioning(url: str = "http://127.0.0.1:9090") -> dict[str, Any]:
    """``provisioning/datasources/prometheus.yml``."""
    return {
        "apiVersion": 1,
        "datasources": [
            {
                "name": "Prometheus",
                "type": "prometheus",
                "uid": DATASOURCE_UID,
                "access": "proxy",
                "url": url,
                "isDefault": True,
                "jsonData": {"timeInterval": "15s"},
            }
        ],
    }


def dashboard_provisioning() -> dict[str, Any]:
    """``provisioning/dashboards/m3mon.yml``: load every JSON file of the dashboards folder."""
    return {
        "apiVersion": 1,
        "providers": [
            {
                "name": "m3mon",
                "folder": "M3 monitor",
                "type": "file",
                "disableDeletion": True,
                "allowUiUpdates": False,
                "options": {"path": DASHBOARD_DIR, "foldersFromFilesStructure": False},
            }
        ],
    }
