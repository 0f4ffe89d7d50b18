"""ServiceMonitor and PodMonitors: Prometheus scrapes what ``deploy/prometheus.yml`` scrapes, with
the labels the rules select on.

* The monitor: a ServiceMonitor on its Service's ``http`` port, relabelled ``job=<prometheus_job_monitor>``.
  The operator labels each target ``endpoint=<port name>``; the monitor's own series carry an
  ``endpoint`` label (the vLLM endpoint), so the target label is dropped before the scrape, as in
  ``deploy/prometheus.yml``, where the monitor's job has none.
* Each vLLM endpoint: a PodMonitor selecting pods labelled ``m3mon/endpoint=<name>`` in any
  namespace, keeping the container port of the endpoint's ``base_url``, at its ``scrape_interval``,
  relabelled ``endpoint=<name>`` and ``job=<prometheus_job_vllm>``, with the same metric relabelling
  (``vllm_x`` back to ``vllm:x``) as the default target.
* Each endpoint with a ``gpu_exporter``: a PodMonitor on the node exporter DaemonSet (dcgm-exporter,
  or AMD's device-metrics-exporter), keeping the pods on nodes labelled ``m3mon/endpoint=<name>``
  (``attachMetadata.node``), relabelled ``endpoint``, ``gpu_exporter`` and ``job=gpu-exporter``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from monitor import conventions as cv
from monitor.generate.kubernetes.common import (
    CA_KEY,
    ENDPOINT_LABEL,
    ENDPOINT_META_NODE,
    NAME,
    PORT_HTTP,
    PORT_NUMBER_META,
    SECRET_CLIENT,
    Options,
    dns_name,
    meta,
    monitor_labels,
    monitor_scheme,
    operator_labels,
    secret_key,
    service_host,
    tls,
    url_port,
)
from monitor.generate.prometheus_config import UNESCAPE_COLONS, duration
from monitor.model import Endpoint, Model

API_VERSION = "monitoring.coreos.com/v1"
#: Pod labels of the GPU exporters' DaemonSets: dcgm-exporter's Helm chart and manifests label its
#: pods so; for AMD's device-metrics-exporter, a label set with the chart's pod labels (docs/kubernetes.md).
GPU_EXPORTER_PODS = {
    "dcgm": {"app.kubernetes.io/name": "dcgm-exporter"},
    "amd": {"m3mon/gpu-exporter": "amd"},
}
#: Target labels the operator sets that the monitor's own series also carry.
MONITOR_OWN_LABELS = (cv.L_ENDPOINT,)


def _set(label: str, value: str) -> dict[str, Any]:
    return {"targetLabel": label, "replacement": value, "action": "replace"}


def _keep(source: str, regex: str) -> dict[str, Any]:
    return {"sourceLabels": [source], "regex": regex, "action": "keep"}


def _metric_relabelings() -> list[dict[str, Any]]:
    r = UNESCAPE_COLONS
    return [{"sourceLabels": r["source_labels"], "regex": r["regex"], "targetLabel": r["target_label"],
             "replacement": r["replacement"], "action": "replace"}]  # fmt: skip


def monitor_service_monitor(model: Model, options: Options) -> dict[str, Any]:
    endpoint: dict[str, Any] = {
        "port": PORT_HTTP,
        "path": "/metrics",
        "interval": "15s",
        "scheme": monitor_scheme(model),
        "relabelings": [
            {"regex": "|".join(MONITOR_OWN_LABELS), "action": "labeldrop"},
            _set(cv.L_JOB, model.alerting.job_monitor),
        ],
    }
    if model.credentials is not None:
        endpoint["basicAuth"] = {
            "username": secret_key(SECRET_CLIENT, "username"),
            "password": secret_key(SECRET_CLIENT, "password"),
        }
    if tls(model):
        endpoint["tlsConfig"] = {"ca": {"secret": secret_key(SECRET_CLIENT, CA_KEY)},
                                 "serverName": service_host(options)}  # fmt: skip
    return {
        "apiVersion": API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": meta(NAME, operator_labels(options)),
        "spec": {"selector": {"matchLabels": monitor_labels()}, "endpoints": [endpoint]},
    }


def _pod_monitor(name: str, options: Options, selector: dict[str, str], endpoint: dict[str, Any],
                 node: bool = False) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {}
    if node:
        spec["attachMetadata"] = {"node": True}
    spec |= {
        "namespaceSelector": {"any": True},
        "selector": {"matchLabels": selector},
        "podMetricsEndpoints": [endpoint],
    }
    return {"apiVersion": API_VERSION, "kind": "PodMonitor",
            "metadata": meta(name, operator_labels(options)), "spec": spec}  # fmt: skip


def vllm_pod_monitor(model: Model, e: Endpoint, options: Options) -> dict[str, Any]:
    url = urlsplit(e.metrics_url)
    endpoint = {
        "path": url.path or "/metrics",
        "scheme": url.scheme,
        "interval": duration(e.scrape_interval),
        "relabelings": [
            _keep(PORT_NUMBER_META, str(url_port(e.metrics_url))),
            _set(cv.L_ENDPOINT, e.name),
            _set(cv.L_JOB, model.alerting.job_vllm),
        ],
        "metricRelabelings": _metric_relabelings(),
    }
    return _pod_monitor(dns_name(NAME, "vllm", e.name), options, {ENDPOINT_LABEL: e.name}, endpoint)


def gpu_pod_monitor(e: Endpoint, options: Options) -> dict[str, Any]:
    assert e.gpu_exporter is not None
    url = urlsplit(e.gpu_exporter.url)
    kind = e.gpu_exporter.kind
    endpoint = {
        "path": url.path or "/metrics",
        "scheme": url.scheme,
        "interval": duration(e.scrape_interval),
        "relabelings": [
            _keep(PORT_NUMBER_META, str(url_port(e.gpu_exporter.url))),
            _keep(ENDPOINT_META_NODE, e.name),
            _set(cv.L_ENDPOINT, e.name),
            _set("gpu_exporter", kind),
            _set(cv.L_JOB, cv.JOB_GPU),
        ],
    }
    pods = GPU_EXPORTER_PODS["amd" if kind == "amd" else "dcgm"]
    return _pod_monitor(dns_name(NAME, "gpu", e.name), options, pods, endpoint, node=True)


def scrape_objects(model: Model, options: Options) -> list[dict[str, Any]]:
    """The ServiceMonitor of the monitor, then the PodMonitors of every endpoint and GPU exporter."""
    out = [monitor_service_monitor(model, options)]
    out += [vllm_pod_monitor(model, e, options) for e in model.endpoints]
    out += [gpu_pod_monitor(e, options) for e in model.endpoints if e.gpu_exporter is not None]
    return out
