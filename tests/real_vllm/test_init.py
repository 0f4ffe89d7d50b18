"""``m3mon init --from`` a real vLLM (0.32.0, CPU): what it writes names the served model and context
length /v1/models gives, probes tool calls (the server runs --tool-call-parser hermes, so vLLM
registers its parser counter), puts every latency threshold on a bucket edge the real page serves
(read with prometheus_client), and passes ``m3mon check-config --metrics`` against the server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from monitor.model import load_model
from tests.e2e.stack import m3mon
from tests.init.pages import FAMILIES, bucket_edges
from tests.real_vllm.conftest import Real
from tests.real_vllm.stack import MAX_MODEL_LEN, SERVED
from tests.support import localhttp


def _block_size(text: str) -> str:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "vllm:cache_config_info":
                return str(s.labels["block_size"])
    raise AssertionError("no vllm:cache_config_info on the page")


def test_init_from_a_real_vllm(real: Real, tmp_path: Path) -> None:
    base = real.server.base_url
    out = tmp_path / "m3mon.yaml"
    done = subprocess.run(
        m3mon("init", "--from", base, "-o", str(out)), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    card = localhttp.get(f"{base}/v1/models", timeout=10).json()["data"][0]
    assert card["id"] == SERVED and card["max_model_len"] == MAX_MODEL_LEN
    doc = yaml.safe_load(out.read_text())
    (endpoint,) = doc["endpoints"]
    (cls,) = doc["request_classes"]
    assert endpoint["model"] == SERVED and endpoint["backend"] == "vllm"
    assert cls["max_context_tokens"] == MAX_MODEL_LEN
    assert cls["probes"] == ["chat", "tool_call"]
    text = localhttp.get(f"{base}/metrics", timeout=10).text
    said = done.stdout
    assert "vllm 0.32.0" in said and f"block size {_block_size(text)}" in said, said
    assert "speculative decoding off" in said  # no draft model on this server
    edges = bucket_edges(text)
    model = load_model(out)
    server = [s for s in model.slos if s.threshold is not None]
    assert {s.sli for s in server} == {"ttft", "itl"}
    for slo in server:
        assert slo.source == "server"
        family = next(f for f in FAMILIES[slo.sli] if f in edges)
        assert slo.threshold in edges[family], (slo.id, slo.threshold, sorted(edges[family]))
    check = subprocess.run(m3mon("check-config", str(out), "--metrics", f"{base}/metrics"),
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    edges_ok = [
        line for line in check.stdout.splitlines() if line.startswith("ok:") and "is a bucket edge" in line
    ]
    assert len(edges_ok) == 2, check.stdout
