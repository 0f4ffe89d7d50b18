"""Dashboards validate against Grafana's schema and cover vLLM's example dashboards."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from monitor.generate.dashboards.parity import COUNTERPARTS
from tests.generate.conftest import REPO

SCHEMA = REPO / "tests" / "schemas" / "grafana-dashboard.schema.json"
#: Fields of a Prometheus annotation query that Grafana stores at the top level of the annotation
#: but that @grafana/schema's TypeScript type does not declare (see tests/schemas/README.md).
PROMETHEUS_ANNOTATION_FIELDS = ("expr", "step", "titleFormat", "textFormat", "tagKeys", "useValueForTime")


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA.read_text())
    patched = copy.deepcopy(schema)
    ann = patched["definitions"]["Dashboard"]["properties"]["annotations"]["properties"]["list"]["items"]
    for name in PROMETHEUS_ANNOTATION_FIELDS:
        ann["properties"][name] = {"type": "string"}
    return patched


def _dashboards(generated: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((generated / "dashboards").glob("*.json"))}


def _panels(d: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in d["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def test_dashboards_validate_against_grafana_schema(generated: Path) -> None:
    validator = jsonschema.Draft7Validator(_schema())
    dashboards = _dashboards(generated)
    assert {
        "m3mon-fleet",
        "m3mon-slo",
        "m3mon-latency",
        "m3mon-cache",
        "m3mon-spec-decode",
        "m3mon-probes",
        "m3mon-vllm-engine",
    } <= dashboards.keys()
    for uid, d in dashboards.items():
        errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(d)]
        assert not errors, f"{uid}: {errors[:5]}"


def test_schema_rejects_a_broken_dashboard(generated: Path) -> None:
    d = _dashboards(generated)["m3mon-fleet"]
    d["panels"][1]["gridPos"] = {"h": "tall"}
    assert list(jsonschema.Draft7Validator(_schema()).iter_errors(d))


def test_template_variables_and_deployment_annotation(generated: Path) -> None:
    for uid, d in _dashboards(generated).items():
        names = {t["name"] for t in d["templating"]["list"]}
        assert "datasource" in names and "endpoint" in names, uid
        assert any("m3mon_deployment_info" in a.get("expr", "") for a in d["annotations"]["list"])
    names = set().union(
        *({t["name"] for t in d["templating"]["list"]} for d in _dashboards(generated).values())
    )
    assert {"endpoint", "model", "class"} <= names


def test_panel_ids_unique(generated: Path) -> None:
    for uid, d in _dashboards(generated).items():
        ids = [p["id"] for p in _panels(d)]
        assert len(ids) == len(set(ids)), uid


@pytest.mark.parametrize("cp", COUNTERPARTS, ids=lambda c: f"{c.source}:{c.upstream_title}")
def test_every_vllm_example_panel_has_a_counterpart(generated: Path, cp: Any) -> None:
    d = _dashboards(generated)["m3mon-vllm-engine"]
    panel = next((p for p in _panels(d) if p.get("title") == cp.title), None)
    assert panel is not None, f"no panel titled {cp.title!r}"
    exprs = " ".join(t["expr"] for t in panel["targets"])
    for metric in cp.metrics:
        assert re.search(re.escape(metric) + r"(_bucket|_sum|_count)?\{", exprs), (cp.title, metric)


def test_parity_list_covers_the_reference_titles() -> None:
    upstream_91 = {
        "E2E Request Latency",
        "Token Throughput",
        "Inter Token Latency",
        "Time Per Output Token (TPOT)",
        "Scheduler State",
        "Time To First Token Latency",
        "Cache Utilization",
        "Request Prompt Length",
        "Request Generation Length",
        "Finish Reason",
        "Queue Time",
        "Requests Prefill and Decode Time",
        "Max Generation Token in Sequence Group",
    }
    assert upstream_91 <= {c.upstream_title for c in COUNTERPARTS if c.source == "G"}
    assert len([c for c in COUNTERPARTS if c.source == "P"]) == 16
    assert len([c for c in COUNTERPARTS if c.source == "Q"]) == 14
