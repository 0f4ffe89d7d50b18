"""prometheus.yml: scrape every vLLM endpoint (labelled ``endpoint``) and the monitor, load the rules.

One scrape job per role (``alerting.prometheus_job_vllm`` / ``..._monitor``), as the rules select
by job. Per-endpoint metrics paths and schemes travel as ``__metrics_path__``/``__scheme__`` target
labels; the job scrapes at the shortest configured interval. With ``exporter.credentials`` the
monitor's job authenticates (``basic_auth`` with a ``password_file``, never the password itself)
and, when the monitor's receiver URL is https, scrapes over TLS trusting ``ca_file``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from monitor import conventions as cv
from monitor.model import Endpoint, Model

#: prometheus_client >= 0.22 answers Prometheus 2.x's OpenMetrics Accept header with
#: ``escaping=underscores``: ``vllm:num_requests_running`` arrives as ``vllm_num_requests_running``.
#: Restore vLLM's names (no vLLM family starts with ``vllm_``) so rules and dashboards match both
#: this and the plain-text format.
_UNESCAPE_COLONS = {
    "source_labels": ["__name__"],
    "regex": "vllm_(.+)",
    "target_label": "__name__",
    "replacement": "vllm:$1",
}


def _duration(seconds: float) -> str:
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{int(seconds * 1000)}ms"


def _target(e: Endpoint) -> dict[str, Any]:
    url = urlsplit(e.metrics_url)
    return {
        "targets": [url.netloc],
        "labels": {
            cv.L_ENDPOINT: e.name,
            "__metrics_path__": url.path or "/metrics",
            "__scheme__": url.scheme,
        },
    }


def monitor_client(model: Model) -> dict[str, Any]:
    """What a client of the monitor sends: basic auth from a password file, the CA for its TLS.

    Empty without ``exporter.credentials``. The keys are those of Prometheus' scrape config and
    of Alertmanager's ``http_config`` alike.
    """
    creds = model.credentials
    if creds is None:
        return {}
    out: dict[str, Any] = {"basic_auth": {"username": creds.username, "password_file": creds.password_file}}
    if creds.ca_file:
        out["tls_config"] = {"ca_file": creds.ca_file}
    return out


def _monitor_job(model: Model, interval: float | None) -> dict[str, Any]:
    job: dict[str, Any] = {
        "job_name": model.alerting.job_monitor,
        "scrape_interval": _duration(interval or 15.0),
    }
    if urlsplit(model.alerting.monitor_receiver_url).scheme == "https":
        job["scheme"] = "https"
    job.update(monitor_client(model))
    job["static_configs"] = [{"targets": [model.exporter_listen]}]
    return job


def prometheus_config(
    model: Model,
    rule_files: list[str],
    alertmanager: str = "127.0.0.1:9093",
    interval: float | None = None,
) -> dict[str, Any]:
    """The prometheus.yml document. ``interval`` overrides scrape and evaluation intervals (tests)."""
    scrape = interval or min(e.scrape_interval for e in model.endpoints)
    evaluation = interval or 15.0
    return {
        "global": {"scrape_interval": _duration(scrape), "evaluation_interval": _duration(evaluation)},
        "rule_files": rule_files,
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "scrape_configs": [
            {
                "job_name": model.alerting.job_vllm,
                "scrape_interval": _duration(scrape),
                "static_configs": [_target(e) for e in model.endpoints],
                "metric_relabel_configs": [_UNESCAPE_COLONS],
            },
            _monitor_job(model, interval),
        ],
    }
