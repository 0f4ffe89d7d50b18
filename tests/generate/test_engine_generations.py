"""The engine dashboard's first row reads every vLLM generation: with promtool's PromQL engine, the
KV-cache and inter-token panels of the kept dashboard show an endpoint that exposes only the older
names (``vllm:gpu_cache_usage_perc``, V0 and V1 up to 0.11; ``vllm:time_per_output_token_seconds``,
up to 0.11), and read only the newest name on an endpoint that exposes both."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.generate.conftest import REPO
from tests.support.real import require_binary

pytestmark = pytest.mark.real

VARS = {"$endpoint": ".*", "$model": ".*", "$__rate_interval": "5m"}


def _expr(title: str, index: int) -> str:
    d = json.loads((REPO / "dashboards" / "m3mon-vllm-engine.json").read_text())
    panel = next(p for p in d["panels"] if p["title"] == title)
    expr = str(panel["targets"][index]["expr"])
    for k, v in VARS.items():
        expr = expr.replace(k, v)
    return expr


def _series(name: str, endpoint: str, values: str, **labels: str) -> dict[str, str]:
    extra = "".join(f',{k}="{v}"' for k, v in labels.items())
    return {"series": f'{name}{{job="vllm",endpoint="{endpoint}",model_name="m"{extra}}}', "values": values}


def _histogram(name: str, endpoint: str, low: str) -> list[dict[str, str]]:
    """One observation a minute at or under ``low`` seconds and one above it (P50 = ``low``)."""
    return [
        _series(f"{name}_bucket", endpoint, "0+1x10", le=low),
        _series(f"{name}_bucket", endpoint, "0+2x10", le="+Inf"),
        _series(f"{name}_count", endpoint, "0+2x10"),
        _series(f"{name}_sum", endpoint, "0+1x10"),
    ]


def test_first_row_reads_older_vllm_names_and_prefers_the_newest(tmp_path: Path) -> None:
    series = [
        _series("vllm:gpu_cache_usage_perc", "v0", "0.25x10"),  # the older generation only
        *_histogram("vllm:time_per_output_token_seconds", "v0", "0.05"),
        _series("vllm:kv_cache_usage_perc", "both", "0.5x10"),  # 0.10-0.11 expose both names
        _series("vllm:gpu_cache_usage_perc", "both", "0.9x10"),
        *_histogram("vllm:inter_token_latency_seconds", "both", "0.01"),
        *_histogram("vllm:time_per_output_token_seconds", "both", "0.2"),
    ]
    tests: list[dict[str, Any]] = [
        {"expr": _expr("KV cache utilization", 0), "eval_time": "9m",
         "exp_samples": [{"labels": '{endpoint="v0"}', "value": 0.25},
                         {"labels": '{endpoint="both"}', "value": 0.5}]},
        {"expr": _expr("Inter-token latency", 3), "eval_time": "9m",  # P99, P95, P90, P50: the P50
         "exp_samples": [{"labels": '{endpoint="v0"}', "value": 0.05},
                         {"labels": '{endpoint="both"}', "value": 0.01}]},
    ]  # fmt: skip
    doc = {"rule_files": [], "evaluation_interval": "1m",
           "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}]}  # fmt: skip
    (tmp_path / "engine.test.yml").write_text(yaml.safe_dump(doc))
    promtool = require_binary("promtool", "/usr/bin/promtool")
    proc = subprocess.run([promtool, "test", "rules", "engine.test.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
