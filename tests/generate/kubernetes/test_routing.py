"""The AlertmanagerConfig routes as the default target's ``alerts/alertmanager.yml`` does, and the
dashboard ConfigMaps hold the default target's dashboards; the CLI refuses bad flags in one line.

The AlertmanagerConfig is read back into Alertmanager's own form with the CRD's documented field
names (camelCase keys, matcher objects ``{name, value, matchType}``) and compared whole; the one
documented difference is the monitor's webhook (its Service URL, Secret references for files)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli import main
from tests.generate.kubernetes.conftest import EXAMPLE, objects, of_kind

MONITOR_RECEIVER = "m3mon"
CONFIGMAP_LIMIT = 1024 * 1024  # bytes of data the API server takes in one ConfigMap


def _snake(key: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def _matcher(m: dict[str, str]) -> str:
    value = m["value"].replace("\\", "\\\\").replace('"', '\\"')
    return f'{m["name"]}{m.get("matchType", "=")}"{value}"'


def _route(route: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in route.items():
        if key == "matchers":
            out["matchers"] = [_matcher(m) for m in value]
        elif key == "routes":
            out["routes"] = [_route(r) for r in value]
        else:
            out[_snake(key)] = value
    return out


def _receiver(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": r["name"]}
    if "webhookConfigs" in r:
        out["webhook_configs"] = [
            {"url": w["url"], "send_resolved": w["sendResolved"]} for w in r["webhookConfigs"]
        ]
    return out


def _as_alertmanager_yml(spec: dict[str, Any]) -> dict[str, Any]:
    inhibit = [{"source_matchers": [_matcher(m) for m in i["sourceMatch"]],
                "target_matchers": [_matcher(m) for m in i["targetMatch"]], "equal": i["equal"]}
               for i in spec["inhibitRules"]]  # fmt: skip
    return {"route": _route(spec["route"]), "receivers": [_receiver(r) for r in spec["receivers"]],
            "inhibit_rules": inhibit}  # fmt: skip


def _without_monitor_webhook(config: dict[str, Any]) -> dict[str, Any]:
    for r in config["receivers"]:
        if r["name"] == MONITOR_RECEIVER:
            r.pop("webhook_configs")
    return config


def test_alertmanager_config_routes_as_the_default_target(case: tuple[Path, Path, Path]) -> None:
    _, default, k8s = case
    (amc,) = of_kind(objects(k8s), "AlertmanagerConfig")
    expected = yaml.safe_load((default / "alerts/alertmanager.yml").read_text())
    got = _as_alertmanager_yml(amc["spec"])
    assert _without_monitor_webhook(got) == _without_monitor_webhook(expected)


def test_the_monitor_webhook_is_its_service(case: tuple[Path, Path, Path]) -> None:
    """The receiver posts to the Service's ``http`` port, authenticating with the client Secret when
    the monitor asks for credentials (no password file inside the operator's Alertmanager)."""
    _, default, k8s = case
    objs = objects(k8s)
    (amc,), (svc,) = of_kind(objs, "AlertmanagerConfig"), of_kind(objs, "Service")
    (hook,) = next(r for r in amc["spec"]["receivers"] if r["name"] == MONITOR_RECEIVER)["webhookConfigs"]
    port = next(p["port"] for p in svc["spec"]["ports"] if p["name"] == "http")
    assert re.fullmatch(rf"https?://{svc['metadata']['name']}\.m3mon\.svc:{port}/alertmanager", hook["url"])
    expected = yaml.safe_load((default / "alerts/alertmanager.yml").read_text())
    (default_hook,) = next(r for r in expected["receivers"] if r["name"] == MONITOR_RECEIVER)[
        "webhook_configs"
    ]
    assert hook["url"].split(":")[0] == default_hook["url"].split(":")[0]  # the same scheme
    assert ("httpConfig" in hook) == ("http_config" in default_hook)
    if "http_config" in default_hook:
        assert set(hook["httpConfig"]["basicAuth"]) == {"username", "password"}
        assert ("tlsConfig" in hook["httpConfig"]) == ("tls_config" in default_hook["http_config"])


def test_dashboards_are_sidecar_config_maps(case: tuple[Path, Path, Path]) -> None:
    _, default, k8s = case
    maps = [
        m
        for m in of_kind(objects(k8s), "ConfigMap")
        if m["metadata"]["labels"].get("grafana_dashboard") == "1"
    ]
    data = {k: v for m in maps for k, v in m["data"].items()}
    files = {p.name: p.read_text() for p in (default / "dashboards").glob("*.json")}
    assert len(files) >= 7
    assert data == files
    assert all(len(m["data"]) == 1 for m in maps)
    assert all(json.loads(v)["uid"] + ".json" == k for k, v in data.items())
    assert max(len(v.encode()) for v in data.values()) < CONFIGMAP_LIMIT


def test_bad_flags_are_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["generate", "-c", str(EXAMPLE), "-o", str(out), "--target", "kubernetes",
                 "--namespace", "Not_A_Name"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--namespace" in err
    assert not out.exists()


def test_endpoint_names_that_collide_as_object_names_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``m3.interactive`` and ``m3-interactive`` are distinct endpoints but one Kubernetes name."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["endpoints"][1]["name"] = doc["endpoints"][0]["name"].replace("-", ".")
    config, out = tmp_path / "monitor.yaml", tmp_path / "out"
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["generate", "-c", str(config), "-o", str(out), "--target", "kubernetes"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "collide" in err
    assert not out.exists()


def test_a_database_password_never_goes_into_a_config_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["storage"]["url"] = "postgresql+psycopg://m3mon:s3cret-pw@db.example:5432/m3mon"
    config, out = tmp_path / "monitor.yaml", tmp_path / "out"
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["generate", "-c", str(config), "-o", str(out), "--target", "kubernetes"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "m3mon-env" in err and "s3cret-pw" not in err
    assert not out.exists()
