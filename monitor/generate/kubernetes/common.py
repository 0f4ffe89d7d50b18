"""What every Kubernetes object of ``m3mon generate --target kubernetes`` shares: names, labels,
the ports of the monitor's Service, the Secrets it references, and the YAML form.

The monitor's Deployment, Service and ServiceMonitor share :func:`monitor_labels`, so the Service
selects the pods and the ServiceMonitor selects the Service. Every prometheus-operator object
carries ``release: <release>``, the label kube-prometheus-stack's default ``ruleSelector``,
``serviceMonitorSelector`` and ``podMonitorSelector`` match (``--release``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from monitor.generate.kubernetes.defaults import DEFAULT_IMAGE, DEFAULT_NAMESPACE, DEFAULT_RELEASE
from monitor.generate.rules import dump_yaml
from monitor.model import Model

NAME = "m3mon"
#: The Service port the exporter, the Alertmanager receiver and /-/healthy, /-/ready are served on.
PORT_HTTP = "http"
#: A second Service port on OTLP/HTTP's registered port, to the same container port: the monitor
#: receives ``/v1/traces`` on its one HTTP listener, and vLLM's exporter is pointed at this port.
PORT_OTLP = "otlp-http"
OTLP_PORT = 4318
#: The config (``monitor.yaml``) is mounted here; the Secrets beside it (no mount inside another).
CONFIG_DIR = "/etc/m3mon/config"
CONFIG_FILE = f"{CONFIG_DIR}/monitor.yaml"
#: The working directory: the SQLite store (a relative ``sqlite:///`` path) and the spool.
DATA_DIR = "/var/lib/m3mon"
#: Secret with the storage URL (key ``url``) and one key per environment variable the config names.
SECRET_ENV = "m3mon-env"
STORAGE_URL_KEY = "url"
#: Secret with the web config (``web-config.yml``, and ``monitor.crt``/``monitor.key`` with TLS).
SECRET_WEB = "m3mon-web"
#: Secret the monitor's clients read: ``username``, ``password`` (and ``ca.pem`` with TLS).
SECRET_CLIENT = "m3mon-client"
CA_KEY = "ca.pem"
#: Label a vLLM pod (and a GPU node) carries with the name of its configured endpoint.
ENDPOINT_LABEL = "m3mon/endpoint"
#: The same label as Prometheus' Kubernetes discovery names it.
ENDPOINT_META_POD = "__meta_kubernetes_pod_label_m3mon_endpoint"
ENDPOINT_META_NODE = "__meta_kubernetes_node_label_m3mon_endpoint"
PORT_NUMBER_META = "__meta_kubernetes_pod_container_port_number"


@dataclass(frozen=True)
class Options:
    """Where the objects go and what selects them."""

    namespace: str = DEFAULT_NAMESPACE
    release: str = DEFAULT_RELEASE
    image: str = DEFAULT_IMAGE


def monitor_labels() -> dict[str, str]:
    """The monitor's pod labels: the Service's selector and the ServiceMonitor's."""
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "monitor"}


def part_of() -> dict[str, str]:
    return {"app.kubernetes.io/part-of": NAME}


def operator_labels(options: Options) -> dict[str, str]:
    """Labels of a prometheus-operator object: kube-prometheus-stack selects ``release``."""
    return {**part_of(), "release": options.release}


def meta(name: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "labels": labels, **extra}


def dns_name(*parts: str) -> str:
    """A DNS-1123 name (lowercase letters, digits, '-') from config names ('_' and '.' become '-')."""
    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    return name[:63].rstrip("-")


def exporter_port(model: Model) -> int:
    """The port of ``exporter.listen`` (``HOST:PORT``): the monitor's one HTTP listener."""
    return int(model.exporter_listen.rsplit(":", 1)[1])


def url_port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def monitor_scheme(model: Model) -> str:
    """https when the monitor serves TLS (its receiver URL says so), else http."""
    return "https" if urlsplit(model.alerting.monitor_receiver_url).scheme == "https" else "http"


def service_host(options: Options) -> str:
    return f"{NAME}.{options.namespace}.svc"


def monitor_url(model: Model, options: Options, path: str, port: int | None = None) -> str:
    """A URL of the monitor inside the cluster, through its Service."""
    return f"{monitor_scheme(model)}://{service_host(options)}:{port or exporter_port(model)}{path}"


def tls(model: Model) -> bool:
    return model.credentials is not None and model.credentials.ca_file is not None


def secret_key(name: str, key: str) -> dict[str, str]:
    return {"name": name, "key": key}


def yaml_file(obj: dict[str, Any], banner: str) -> str:
    return dump_yaml(obj, banner)
