"""Every generated dashboard opens every other; the SLO overview's rows open the class's SLO and
engine dashboards; the engine dashboard starts with the panels of vLLM's own example dashboard."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from tests.generate.conftest import REPO

#: The panels of vLLM's example dashboard (examples/observability/prometheus_grafana/grafana.json,
#: read at commit 4b5c627), left to right and top to bottom, with the vLLM families each queries,
#: up to the request-length heatmaps; then the TPOT panel of its earlier revisions (0.9.1).
VLLM_FIRST_SCREEN = (
    ("E2E Request Latency", {"vllm:e2e_request_latency_seconds"}),
    ("Token Throughput", {"vllm:prompt_tokens_total", "vllm:generation_tokens_total"}),
    ("Inter Token Latency", {"vllm:inter_token_latency_seconds"}),
    ("Scheduler State", {"vllm:num_requests_running", "vllm:num_requests_waiting"}),
    ("Time To First Token Latency", {"vllm:time_to_first_token_seconds"}),
    ("Cache Utilization", {"vllm:kv_cache_usage_perc"}),
    ("Finish Reason", {"vllm:request_success_total"}),
    ("Time Per Output Token Latency", {"vllm:request_time_per_output_token_seconds"}),
)
#: Names the same panels read on vLLM generations before the current one (V0, V1 <= 0.11).
OLDER_NAMES = {
    "Cache Utilization": "vllm:gpu_cache_usage_perc",
    "Inter Token Latency": "vllm:time_per_output_token_seconds",
}


def _dashboards(root: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((root / "dashboards").glob("*.json"))}


def _opens(d: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether a dashboard link of ``d`` lists ``other`` (by every tag of the link, or by uid)."""
    for link in d.get("links", []):
        if link["type"] == "dashboards" and link["tags"] and set(link["tags"]) <= set(other["tags"]):
            return True
        if link["type"] == "link" and f"/d/{other['uid']}" in link.get("url", ""):
            return True
    return False


def test_every_dashboard_links_to_every_other(generated: Path) -> None:
    dashboards = _dashboards(generated)
    assert len(dashboards) >= 8
    for uid, d in dashboards.items():
        missing = [o for o, other in dashboards.items() if o != uid and not _opens(d, other)]
        assert not missing, f"{uid} opens no link to {missing}"
        assert all(link.get("keepTime") for link in d["links"]), uid


def _table(d: dict[str, Any]) -> dict[str, Any]:
    tables = [p for p in d["panels"] if p["type"] == "table"]
    assert len(tables) == 1
    return tables[0]


def test_overview_opens_on_a_table_of_every_slo_with_stats_above(generated: Path) -> None:
    d = _dashboards(generated)["m3mon-slo-overview"]
    panels = [p for p in d["panels"] if p["type"] != "row"]
    table = _table(d)
    above = [p for p in panels if p["gridPos"]["y"] < table["gridPos"]["y"]]
    assert above and all(p["type"] == "stat" for p in above)
    titles = " / ".join(p["title"] for p in above)
    assert "burning" in titles and "out of budget" in titles, titles
    config = yaml.safe_load((REPO / "examples" / "monitor.yaml").read_text())
    slos = sum(len(c["slos"]) for c in config["request_classes"])
    assert table["gridPos"]["h"] >= slos + 1  # every row visible without scrolling
    shown = set(table["transformations"][1]["options"]["renameByName"].values())
    wanted = {"Class", "SLO", "Objective", "SLI (period)", "Budget left", "Burn 1h", "Burn 6h", "Status"}
    assert wanted <= shown


def _field_links(table: dict[str, Any]) -> list[str]:
    return [
        link["url"]
        for o in table["fieldConfig"]["overrides"]
        for prop in o["properties"]
        if prop["id"] == "links"
        for link in prop["value"]
    ]


def test_overview_rows_open_the_class_slo_and_engine_dashboards(generated: Path) -> None:
    dashboards = _dashboards(generated)
    urls = _field_links(_table(dashboards["m3mon-slo-overview"]))
    targets = {}
    for url in urls:
        parts = urlsplit(url)
        uid = re.fullmatch(r"/d/([^/]+)/?", parts.path)
        assert uid and uid[1] in dashboards, url
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        assert params.get("var-class") == "${__data.fields.class}", url
        assert "${__url_time_range}" in parts.query, url
        variables = {t["name"]: t for t in dashboards[uid[1]]["templating"]["list"]}
        assert "class" in variables, f"{uid[1]} has no class variable for var-class"
        targets[uid[1]] = variables
    assert {"m3mon-slo", "m3mon-vllm-engine"} <= targets.keys()
    # the engine dashboard has no class label on its series: its endpoint list follows the class
    endpoint = targets["m3mon-vllm-engine"]["endpoint"]
    assert "$class" in endpoint["query"] and "allValue" not in endpoint


def _metrics(panel: dict[str, Any]) -> set[str]:
    exprs = " ".join(t["expr"] for t in panel.get("targets", []))
    return {m for m in re.findall(r"(vllm:[a-z0-9_]+?)(?:_bucket|_sum|_count)?\{", exprs)}


def test_engine_dashboard_starts_with_vllms_own_panels(generated: Path) -> None:
    panels = _dashboards(generated)["m3mon-vllm-engine"]["panels"]
    assert panels[0]["type"] == "row"
    first = []
    for p in panels[1:]:
        if p["type"] == "row":
            break
        first.append(p)
    assert len(first) == len(VLLM_FIRST_SCREEN), [p["title"] for p in first]
    for panel, (upstream, families) in zip(first, VLLM_FIRST_SCREEN, strict=True):
        assert families <= _metrics(panel), (upstream, panel["title"], _metrics(panel))
        older = OLDER_NAMES.get(upstream)
        assert older is None or older in _metrics(panel), (upstream, older)
    units = [p["fieldConfig"]["defaults"].get("unit") for p in first]
    assert units[0] == units[2] == units[4] == units[7] == "s" and units[5] == "percentunit"
    # two panels abreast, as upstream lays them out
    assert [p["gridPos"]["w"] for p in first] == [12] * len(first)


def test_compose_grafana_opens_on_the_slo_overview(generated: Path) -> None:
    grafana = yaml.safe_load((generated / "compose.yaml").read_text())["services"]["grafana"]
    home = Path(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    mounts = [v.split(":")[:2] for v in grafana["volumes"]]
    local = next(Path(src) / home.relative_to(dst) for src, dst in mounts if home.is_relative_to(dst))
    assert json.loads((generated / local).read_text())["uid"] == "m3mon-slo-overview"
