"""The files of ``m3mon generate --target kubernetes`` (layout: :mod:`monitor.generate.kubernetes`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import yaml

from monitor import conventions as cv
from monitor.errors import GenerateError
from monitor.generate.kubernetes.alertmanager import alertmanager_config_object
from monitor.generate.kubernetes.common import Options, yaml_file
from monitor.generate.kubernetes.dashboards import dashboard_config_maps
from monitor.generate.kubernetes.rules import prometheus_rules
from monitor.generate.kubernetes.scrape import scrape_objects
from monitor.generate.kubernetes.workload import (
    CONFIG_MAP,
    RUNBOOKS_MAP,
    deployment,
    service,
    sqlite,
    volume_claim,
)
from monitor.generate.output import alert_names
from monitor.generate.runbooks import render_runbooks
from monitor.model import Model

ROOT = "kubernetes"
BASE = f"{ROOT}/monitor"
MONITORING = f"{ROOT}/monitoring"
KUSTOMIZE = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}


def _kustomization(options: Options, resources: list[str], **extra: Any) -> dict[str, Any]:
    return {**KUSTOMIZE, "namespace": options.namespace, "resources": resources, **extra}


def _base(model: Model, options: Options, config_text: str, banner: str) -> dict[str, str]:
    files = {
        "deployment.yaml": yaml_file(deployment(model, options), banner),
        "service.yaml": yaml_file(service(model), banner),
        "monitor.yaml": f"# {banner}\n{config_text}",
    }
    if sqlite(model):
        files["pvc.yaml"] = yaml_file(volume_claim(), banner)
    books = render_runbooks(alert_names(model), banner)
    for name, text in books.items():
        files[f"runbooks/{name}.md"] = text
    generators = [
        {"name": CONFIG_MAP, "files": ["monitor.yaml"]},
        {"name": RUNBOOKS_MAP, "files": [f"runbooks/{n}.md" for n in sorted(books)]},
    ]
    resources = sorted(f for f in files if f.endswith(".yaml") and f != "monitor.yaml")
    kustomization = _kustomization(options, resources, configMapGenerator=generators)
    files["kustomization.yaml"] = yaml_file(kustomization, banner)
    return {f"{BASE}/{k}": v for k, v in files.items()}


def _unique(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objects``, or a GenerateError when config names collide as Kubernetes names (``a.b``, ``a-b``)."""
    seen: dict[tuple[str, str], int] = {}
    for obj in objects:
        key = (obj["kind"], obj["metadata"]["name"])
        seen[key] = seen.get(key, 0) + 1
    twice = sorted(f"{kind} {name}" for (kind, name), n in seen.items() if n > 1)
    if twice:
        raise GenerateError(f"names collide as Kubernetes object names: {', '.join(twice)}")
    return objects


def _monitoring(model: Model, options: Options, banner: str) -> dict[str, str]:
    files = {}
    rules = list(prometheus_rules(model, options).values())
    for obj in _unique(rules + scrape_objects(model, options)):
        files[f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"] = yaml_file(obj, banner)
    files["alertmanagerconfig.yaml"] = yaml_file(alertmanager_config_object(model, options), banner)
    for uid, obj in dashboard_config_maps(model).items():
        files[f"dashboards/{uid}.yaml"] = yaml_file(obj, banner)
    files["kustomization.yaml"] = yaml_file(_kustomization(options, sorted(files)), banner)
    return {f"{MONITORING}/{k}": v for k, v in files.items()}


def _no_password_in_config(config_text: str) -> None:
    """The configuration goes into a ConfigMap: a database password must come from the Secret."""
    doc = yaml.safe_load(config_text)
    url = ((doc or {}).get("storage") or {}).get("url") if isinstance(doc, dict) else None
    if isinstance(url, str) and urlsplit(url).password:
        raise GenerateError(
            "storage.url holds a password, which would be written into a ConfigMap: put the URL in "
            "the m3mon-env Secret (key url, docs/kubernetes.md) and keep one without a password in the file"
        )


def kubernetes_files(model: Model, source: str, config_text: str, options: Options) -> dict[str, str]:
    """Every file of the kubernetes target, keyed by its path relative to the output directory."""
    _no_password_in_config(config_text)
    banner = cv.DO_NOT_EDIT.format(source=source)
    files = {**_base(model, options, config_text, banner), **_monitoring(model, options, banner)}
    top = _kustomization(options, ["monitor", "monitoring"])
    files[f"{ROOT}/kustomization.yaml"] = yaml_file(top, banner)
    return files
