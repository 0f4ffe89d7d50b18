"""The objects find each other and Prometheus ends with the labels the rules select on.

Selectors and port names are checked on the built objects (ServiceMonitor -> Service -> pods).
Scrape labels go through an oracle of Prometheus relabelling (:mod:`.relabel`) with the
operator's own relabellings first, and are compared with the default target's
``deploy/prometheus.yml``, where the rules are known to match (tests/generate/test_prometheus_e2e.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from monitor.exporter import Exporter
from monitor.model import load_model
from tests.generate.kubernetes.conftest import objects, of_kind
from tests.generate.kubernetes.relabel import (
    apply,
    pod_monitor_prefix,
    service_monitor_prefix,
    target_labels,
)


def _subset(small: dict[str, str], big: dict[str, str]) -> bool:
    return small.items() <= big.items()


def test_service_monitor_service_and_pods_match(built: list[dict[str, Any]]) -> None:
    (monitor,), (svc,), (deploy,) = (of_kind(built, k) for k in ("ServiceMonitor", "Service", "Deployment"))
    assert "namespaceSelector" not in monitor["spec"]  # its own namespace: the Service's
    assert monitor["metadata"]["namespace"] == svc["metadata"]["namespace"]
    assert _subset(monitor["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"])
    service_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["port"] in service_ports
    pod = deploy["spec"]["template"]
    assert _subset(svc["spec"]["selector"], pod["metadata"]["labels"])
    assert _subset(deploy["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"])
    (container,) = pod["spec"]["containers"]
    container_ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for port in service_ports.values():
        assert port["targetPort"] in container_ports
    for probe in (container["livenessProbe"], container["readinessProbe"]):
        if "httpGet" in probe:
            assert probe["httpGet"]["port"] in container_ports
        else:  # exec: a request to the container's own port
            url = next(a for a in probe["exec"]["command"] if a.startswith("http"))
            assert urlsplit(url).port in container_ports.values()


def _default_job(default: Path, name: str) -> dict[str, Any]:
    config = yaml.safe_load((default / "deploy/prometheus.yml").read_text())
    return next(j for j in config["scrape_configs"] if j["job_name"] == name)


def _default_target(job: dict[str, Any], endpoint: str | None = None) -> dict[str, str] | None:
    """The labels the default target's job gives one of its static targets."""
    for group in job["static_configs"]:
        labels = {"__address__": group["targets"][0], "job": job["job_name"], **group.get("labels", {})}
        if endpoint is None or labels.get("endpoint") == endpoint:
            out = target_labels(apply(job.get("relabel_configs", []), labels))
            return None if out is None else {k: v for k, v in out.items() if k != "instance"}
    raise AssertionError(f"no default target for {endpoint}")


def test_the_monitors_own_labels_survive_its_scrape(case: tuple[Path, Path, Path]) -> None:
    """No target label collides with a label of the monitor's series (a collision renames the
    series' label ``exported_<name>``); ``job`` is the one the rules select."""
    config, default, k8s = case
    (monitor,) = of_kind(objects(k8s), "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    meta = {"__address__": "10.0.0.5:9464", "__meta_kubernetes_endpoint_port_name": endpoint["port"],
            "__meta_kubernetes_namespace": "m3mon", "__meta_kubernetes_service_name": "m3mon",
            "__meta_kubernetes_pod_name": "m3mon-5d9c", "__meta_kubernetes_pod_container_name": "m3mon"}  # fmt: skip
    rules = service_monitor_prefix(endpoint["port"]) + endpoint["relabelings"]
    got = target_labels(apply(rules, meta))
    assert got is not None
    model = load_model(str(config))
    jobs = yaml.safe_load((default / "deploy/prometheus.yml").read_text())["scrape_configs"]
    listen = next(j for j in jobs if j["static_configs"][0]["targets"] == [model.exporter_listen])
    assert got["job"] == listen["job_name"]
    exported = {
        n for c in Exporter(model).registry._collector_to_names for n in getattr(c, "_labelnames", ())
    }
    assert "endpoint" in exported
    assert not (set(got) - {"job", "instance"}) & exported


def _vllm_meta(pod_monitor: dict[str, Any], port: int) -> dict[str, str]:
    (label, value), = pod_monitor["spec"]["selector"]["matchLabels"].items()  # fmt: skip
    sanitized = "__meta_kubernetes_pod_label_" + "".join(c if c.isalnum() else "_" for c in label)
    return {"__address__": f"10.1.2.3:{port}", "__meta_kubernetes_namespace": "llm",
            "__meta_kubernetes_pod_name": "vllm-0", "__meta_kubernetes_pod_container_name": "vllm",
            "__meta_kubernetes_pod_container_port_number": str(port), sanitized: value}  # fmt: skip


def _scraped(pod_monitor: dict[str, Any], meta: dict[str, str]) -> dict[str, str] | None:
    (endpoint,) = pod_monitor["spec"]["podMetricsEndpoints"]
    name = pod_monitor["metadata"]["name"]
    return target_labels(apply(pod_monitor_prefix("m3mon", name) + endpoint["relabelings"], meta))


def test_vllm_pods_are_scraped_as_in_the_default_target(case: tuple[Path, Path, Path]) -> None:
    config, default, k8s = case
    model = load_model(str(config))
    pod_monitors = {p["spec"]["selector"]["matchLabels"].get("m3mon/endpoint"): p
                    for p in of_kind(objects(k8s), "PodMonitor")}  # fmt: skip
    config_jobs = yaml.safe_load((default / "deploy/prometheus.yml").read_text())["scrape_configs"]
    for e in model.endpoints:
        pm = pod_monitors[e.name]
        job = next(j for j in config_jobs if any(g["labels"].get("endpoint") == e.name
                                                  and g["targets"][0] == urlsplit(e.base_url).netloc
                                                  for g in j["static_configs"]))  # fmt: skip
        expected = _default_target(job, e.name)
        assert expected is not None
        port = urlsplit(e.base_url).port
        assert port is not None
        got = _scraped(pm, _vllm_meta(pm, port))
        assert got is not None
        assert {k: got[k] for k in ("job", "endpoint")} == {k: expected[k] for k in ("job", "endpoint")}
        assert _scraped(pm, _vllm_meta(pm, 9999)) is None  # another container port of the pod
        (endpoint,) = pm["spec"]["podMetricsEndpoints"]
        group = next(g for g in job["static_configs"] if g["labels"].get("endpoint") == e.name)
        assert endpoint["path"] == group["labels"]["__metrics_path__"]
        assert endpoint["interval"] == job["scrape_interval"]
        for name in ("vllm_num_requests_running", "vllm:num_requests_running", "process_cpu_seconds_total"):
            assert apply(endpoint["metricRelabelings"], {"__name__": name}) == apply(
                job["metric_relabel_configs"], {"__name__": name}
            )


def _gpu_meta(port: int, node_endpoint: str | None) -> dict[str, str]:
    meta = {"__address__": f"10.1.2.4:{port}", "__meta_kubernetes_namespace": "gpu-operator",
            "__meta_kubernetes_pod_name": "dcgm-exporter-x", "__meta_kubernetes_pod_container_name": "exporter",
            "__meta_kubernetes_pod_container_port_number": str(port)}  # fmt: skip
    if node_endpoint is not None:
        meta["__meta_kubernetes_node_label_m3mon_endpoint"] = node_endpoint
    return meta


def test_gpu_exporters_are_scraped_on_their_endpoints_nodes(
    outputs: dict[str, tuple[Path, Path, Path]],
) -> None:
    """Each GPU PodMonitor keeps the exporter on the nodes labelled with its endpoint only, and
    labels it as the default target's ``gpu-exporter`` job labels the endpoint's exporter."""
    config, default, k8s = outputs["variant"]
    model = load_model(str(config))
    gpu = [p for p in of_kind(objects(k8s), "PodMonitor") if p["metadata"]["name"].startswith("m3mon-gpu-")]
    with_gpus = [e for e in model.endpoints if e.gpu_exporter is not None]
    assert len(gpu) == len(with_gpus) == 2
    job = _default_job(default, "gpu-exporter")
    for e in with_gpus:
        assert e.gpu_exporter is not None
        port = urlsplit(e.gpu_exporter.url).port
        assert port is not None
        kept = [(pm, got) for pm in gpu if (got := _scraped(pm, _gpu_meta(port, e.name))) is not None]
        assert len(kept) == 1, f"{e.name}: {len(kept)} GPU PodMonitors keep its nodes' exporter"
        pm, got = kept[0]
        assert pm["spec"]["attachMetadata"] == {"node": True}
        expected = _default_target(job, e.name)
        assert expected is not None
        for label in ("job", "endpoint", "gpu_exporter"):
            assert got[label] == expected[label]
        other = next(x.name for x in model.endpoints if x.name != e.name)
        assert _scraped(pm, _gpu_meta(port, other)) is None
        assert _scraped(pm, _gpu_meta(port, None)) is None
        assert _scraped(pm, _gpu_meta(port + 1, e.name)) is None
