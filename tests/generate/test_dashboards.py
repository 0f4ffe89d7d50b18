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


def test_template_variables_and_deployment_and_maintenance_annotations(generated: Path) -> None:
    for uid, d in _dashboards(generated).items():
        names = {t["name"] for t in d["templating"]["list"]}
        assert "datasource" in names and "endpoint" in names, uid
        assert any("m3mon_deployment_info" in a.get("expr", "") for a in d["annotations"]["list"])
        assert any("M3MonMaintenanceInProgress" in a.get("expr", "") for a in d["annotations"]["list"])
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


# --- histograms are never added up across bucket layouts (one layout = one endpoint) ------------

_AGG = re.compile(r"\b(sum|avg|min|max|count|group|stddev|stdvar|topk|bottomk|quantile)\s*")
_GROUPING = re.compile(r"\s*(by|without)\s*\(([^)]*)\)\s*")


def _close(expr: str, start: int) -> int:
    """Index of the parenthesis closing the one at ``start``."""
    depth = 0
    for i in range(start, len(expr)):
        depth += {"(": 1, ")": -1}.get(expr[i], 0)
        if depth == 0:
            return i
    raise AssertionError(f"unbalanced parentheses in {expr!r}")


def _aggregations(expr: str) -> list[tuple[str, set[str], str]]:
    """Every aggregation of ``expr`` as (by|without|"", its labels, its argument text)."""
    out = []
    for m in _AGG.finditer(expr):
        pos, kind, labels = m.end(), "", ""
        pre = _GROUPING.match(expr, pos)
        if pre:
            kind, labels, pos = pre[1], pre[2], pre.end()
        if pos >= len(expr) or expr[pos] != "(":
            continue  # a metric or label name, not an aggregation
        end = _close(expr, pos)
        post = _GROUPING.match(expr, end + 1)
        if post and not kind:
            kind, labels = post[1], post[2]
        out.append((kind, {x.strip() for x in labels.split(",") if x.strip()}, expr[pos : end + 1]))
    return out


def _bucket_sums_across_layouts(expr: str) -> list[str]:
    """Aggregations of ``_bucket`` series that do not keep both ``le`` and ``endpoint``."""
    return [
        f"{kind or 'no'} by {sorted(labels)}: {arg[:80]}"
        for kind, labels, arg in _aggregations(expr)
        if re.search(r"\w_bucket\b", arg)
        and "histogram_quantile" not in arg  # an aggregation of per-endpoint quantiles is fine
        and (kind != "by" or not {"le", "endpoint"} <= labels)
    ]


def test_bucket_check_flags_sums_across_endpoints() -> None:
    bad = (
        "histogram_quantile(0.9, sum by (le) (rate(x_bucket[1m])))",
        "sum(rate(x_bucket[1m])) by (le, model_name)",
        'sum(rate(x_bucket{le="2.5"}[5m]))',
        "sum without (endpoint) (rate(x_bucket[1m]))",
    )
    good = (
        "histogram_quantile(0.9, sum by (le, endpoint) (rate(x_bucket[1m])))",
        "sum(rate(x_bucket[1m])) by (endpoint, le)",
        "max(histogram_quantile(0.9, sum by (endpoint, le, kind) (rate(x_bucket[1m]))))",
        "histogram_quantile(0.9, rate(x_bucket[1m]))",
        "sum(rate(x_sum[1m])) / sum(rate(x_count[1m]))",
    )
    assert all(_bucket_sums_across_layouts(e) for e in bad)
    assert not any(_bucket_sums_across_layouts(e) for e in good)


@pytest.mark.parametrize("copy", ["generated", "kept"])
def test_no_dashboard_adds_up_buckets_of_different_endpoints(generated: Path, copy: str) -> None:
    found = 0
    for uid, d in _dashboards(generated if copy == "generated" else REPO).items():
        for p in _panels(d):
            for t in p.get("targets", []):
                found += "_bucket" in t["expr"]
                assert not _bucket_sums_across_layouts(t["expr"]), (uid, p["title"], t["expr"])
    assert found > 50


def test_heatmaps_show_one_endpoint_each(generated: Path) -> None:
    heatmaps = 0
    for uid, d in _dashboards(generated).items():
        row: dict[str, Any] = {}
        for p in d["panels"]:
            row = p if p["type"] == "row" else row
            if p["type"] == "heatmap":
                heatmaps += 1
                assert "endpoint" in (row.get("repeat"), p.get("repeat")), (uid, p["title"])
                assert "$endpoint" in row.get("title", "") or "$endpoint" in p["title"], (uid, p["title"])
                assert {t["format"] for t in p["targets"]} == {"heatmap"}, (uid, p["title"])
    assert heatmaps >= 4
