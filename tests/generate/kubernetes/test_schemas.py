"""Every generated object validates: core kinds against the Kubernetes JSON schemas
(kubernetes-validate, strict: no unknown field), operator kinds against prometheus-operator's CRD
schemas (held fixtures, tests/fixtures/k8s-crds/SOURCES.md) made strict the same way, since the API
server silently prunes a field its schema does not know. The kustomize base builds offline."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from tests.generate.kubernetes.conftest import CRDS, kustomize, load_all, objects, of_kind

KUBERNETES_VERSION = "1.32"
CORE_API_VERSIONS = {"v1", "apps/v1"}


def _strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` wherever it lists properties and does not
    keep unknown fields itself."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        open_ = "additionalProperties" in schema or schema.get("x-kubernetes-preserve-unknown-fields")
        if "properties" in schema and not open_:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """``{(apiVersion, kind): strict openAPIV3Schema}`` from the held CRDs."""
    out = {}
    for path in sorted(CRDS.glob("*.yaml")):
        (crd,) = load_all(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
            out[(f"{group}/{version['name']}", kind)] = _strict(schema)
    return out


def validate(obj: dict[str, Any]) -> None:
    key = (obj["apiVersion"], obj["kind"])
    if obj["apiVersion"] in CORE_API_VERSIONS:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        return
    assert key in crd_schemas(), f"{key}: no held CRD schema to validate it against"
    jsonschema.Draft7Validator(crd_schemas()[key]).validate(obj)


def test_every_file_validates(case: tuple[Path, Path, Path]) -> None:
    objs = objects(case[2])
    kinds = {o["kind"] for o in objs}
    assert {"PrometheusRule", "ServiceMonitor", "PodMonitor", "AlertmanagerConfig"} <= kinds
    assert {"Deployment", "Service", "ConfigMap"} <= kinds
    for obj in objs:
        validate(obj)


def test_every_built_object_validates(built: list[dict[str, Any]], case: tuple[Path, Path, Path]) -> None:
    """What kustomize applies: the generated ConfigMaps too, each in the namespace."""
    assert len(built) == len(objects(case[2])) + 2  # + the config and runbook ConfigMaps
    for obj in built:
        validate(obj)
        assert obj["metadata"]["namespace"] == "m3mon"


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("AlertmanagerConfig", ("spec", "receivers", 0, "webhookConfigs", 0), {"sendResolve": True}),
        ("ServiceMonitor", ("spec", "endpoints", 0), {"relabellings": []}),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "relabelings", 0), {"action": "Keepp"}),
        ("Deployment", ("spec", "template", "spec", "containers", 0), {"livenesProbe": {}}),
    ],
)
def test_a_misspelt_field_is_refused(
    outputs: dict[str, tuple[Path, Path, Path]], kind: str, path: tuple[Any, ...], value: dict[str, Any]
) -> None:
    """The validation above can fail: a field the schema does not know, or a wrong enum value."""
    obj = copy.deepcopy(of_kind(objects(outputs["example"][2]), kind)[0])
    node = obj
    for step in path:
        node = node[step]
    node.update(value)
    with pytest.raises((jsonschema.ValidationError, kubernetes_validate.ValidationError)):
        validate(obj)


def test_the_monitor_base_builds_alone(case: tuple[Path, Path, Path]) -> None:
    """``kubectl kustomize DIR/kubernetes/monitor``: the Deployment's ConfigMaps and claim exist
    (under their hashed names), and no Secret is written: only referenced."""
    objs = kustomize(case[2] / "monitor")
    (deployment,) = of_kind(objs, "Deployment")
    maps = {o["metadata"]["name"] for o in of_kind(objs, "ConfigMap")}
    claims = {o["metadata"]["name"] for o in of_kind(objs, "PersistentVolumeClaim")}
    for volume in deployment["spec"]["template"]["spec"]["volumes"]:
        if "configMap" in volume:
            assert volume["configMap"]["name"] in maps
        if "persistentVolumeClaim" in volume:
            assert volume["persistentVolumeClaim"]["claimName"] in claims
    assert not of_kind(objs, "Secret")
    config = next(o for o in of_kind(objs, "ConfigMap") if "monitor.yaml" in o["data"])
    assert config["data"]["monitor.yaml"].split("\n", 1)[1] == case[0].read_text()
