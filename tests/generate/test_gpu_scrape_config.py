"""The generated prometheus.yml scrapes each endpoint's GPU exporter (checked by the real promtool)."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import yaml

from monitor.generate.prometheus_config import prometheus_config
from monitor.model import GpuExporter, Model, load_model
from tests.generate.conftest import REPO
from tests.support.real import require_binary


def model_with_gpus() -> Model:
    base = load_model(REPO / "examples" / "monitor.yaml")
    kinds = {"m3-interactive": GpuExporter("http://10.0.0.5:9400/metrics", "dcgm"),
             "m3-extended": GpuExporter("https://mi300x-1:5000/metrics", "amd")}  # fmt: skip
    endpoints = tuple(dataclasses.replace(e, gpu_exporter=kinds.get(e.name)) for e in base.endpoints)
    return dataclasses.replace(base, endpoints=endpoints)


def test_one_gpu_target_per_endpoint_with_one_at_its_own_interval() -> None:
    cfg = prometheus_config(model_with_gpus(), [])
    gpu = [j for j in cfg["scrape_configs"] if j["job_name"].startswith("gpu-exporter")]
    # examples/monitor.yaml: m3-interactive every 15s, m3-extended every 30s; m3-repo has no GPU exporter
    assert [(j["job_name"], j["scrape_interval"]) for j in gpu] == [("gpu-exporter-15s", "15s"),
                                                                    ("gpu-exporter-30s", "30s")]  # fmt: skip
    targets = {t["labels"]["endpoint"]: (t["targets"], t["labels"]) for j in gpu for t in j["static_configs"]}
    assert targets["m3-interactive"][0] == ["10.0.0.5:9400"]
    assert (
        targets["m3-extended"][1]["__scheme__"] == "https"
        and targets["m3-extended"][1]["gpu_exporter"] == "amd"
    )
    assert all({"target_label": "job", "replacement": "gpu-exporter"} in j["relabel_configs"] for j in gpu)
    plain = prometheus_config(load_model(REPO / "examples" / "monitor.yaml"), [])
    assert not [j for j in plain["scrape_configs"] if j["job_name"].startswith("gpu")]


def test_promtool_accepts_the_config(tmp_path: Path) -> None:
    promtool = require_binary("promtool", "/usr/bin/promtool")
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(prometheus_config(model_with_gpus(), [])))
    proc = subprocess.run([promtool, "check", "config", "--syntax-only", str(path)],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
