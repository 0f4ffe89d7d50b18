"""A real Prometheus scrapes the simulator with the generated config and evaluates every rule and
dashboard expression through its HTTP API: each must parse, and the listed ones must return data.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from monitor.generate.prometheus_config import prometheus_config
from monitor.model import GpuExporter, Model, load_model
from monitor.sim.harness import running_simulator
from tests.generate.conftest import REPO
from tests.support import localhttp
from tests.support.prometheus import free_port, query, running_prometheus, wait_for

pytestmark = [pytest.mark.real, pytest.mark.timeout(120)]

GRAFANA_VARS = {
    "$endpoint": ".*",
    "$model": ".*",
    "$class": ".*",
    "$__rate_interval": "1m",
    "$__interval": "1m",
    "$__range": "1m",
}

#: Dashboard panels (uid, title) that must show data once the simulator has served requests.
PANELS_WITH_DATA = [
    ("m3mon-vllm-engine", "E2E request latency"),
    ("m3mon-vllm-engine", "Time to first token"),
    ("m3mon-vllm-engine", "Inter-token latency"),
    ("m3mon-vllm-engine", "Token throughput"),
    ("m3mon-vllm-engine", "Scheduler state"),
    ("m3mon-vllm-engine", "KV cache utilization"),
    ("m3mon-vllm-engine", "Finish reason"),
    ("m3mon-vllm-engine", "Prefill and decode time"),
    ("m3mon-vllm-engine", "Request prompt length"),
    ("m3mon-fleet", "Requests per endpoint"),
    ("m3mon-cache", "KV cache usage"),
    ("m3mon-cache", "Block size and KV capacity"),
    ("m3mon-cache", "Prefix cache queried / hit tokens"),
    ("m3mon-spec-decode", "Draft acceptance rate"),
    ("m3mon-latency", "interactive-32k: TTFT server vs probes"),
    # the simulator's DCGM page, scraped as the gpu-exporter job beside each endpoint
    ("m3mon-vllm-engine", "GPU utilisation (DCGM and AMD) and KV cache use"),
    ("m3mon-vllm-engine", "SM and tensor activity"),
    ("m3mon-vllm-engine", "GPU memory used"),
    ("m3mon-vllm-engine", "GPU power"),
    ("m3mon-vllm-engine", "NVLink / XGMI traffic"),
]
#: Recording rules (record name, class, slo) that must have data: server SLOs at 1h.
RECORDS_WITH_DATA = [
    ("m3mon:slo_error_ratio:rate1h", "interactive-32k", "ttft-p95"),
    ("m3mon:slo_error_ratio:rate1h", "interactive-32k", "itl-p95"),
    ("m3mon:slo_error_ratio:rate1h", "repo-analysis-128k", "e2e-p95"),
    ("m3mon:slo_error_ratio:rate1h", "repo-analysis-128k", "queue-p95"),
    ("m3mon:slo_objective:ratio", "agent", "availability"),
]
#: Alerts whose condition must be false against a healthy simulator (block size 128, all up).
ALERTS_QUIET = ["VLLMBlockSizeNot128", "VLLMEndpointDown"]


@pytest.fixture(scope="module")
def prom() -> Iterator[tuple[str, Model]]:
    with running_simulator(dcgm_gpus=8) as sim, tempfile.TemporaryDirectory(prefix="m3mon-prom-") as tmp:
        base = load_model(REPO / "examples" / "monitor.yaml")
        gpu = GpuExporter(f"{sim.base_url}/dcgm/metrics", "dcgm")
        endpoints = tuple(
            dataclasses.replace(e, base_url=sim.base_url, gpu_exporter=gpu) for e in base.endpoints
        )
        model = dataclasses.replace(base, endpoints=endpoints, exporter_listen=f"127.0.0.1:{free_port()}")
        rules = _fast_slo_groups(Path(tmp))
        cfg = prometheus_config(model, rules, alertmanager=f"127.0.0.1:{free_port()}", interval=1.0)
        with running_prometheus(cfg, Path(tmp)) as url:
            wait_for(lambda: query(url, 'up{job="vllm"} == 1'), 30, "Prometheus scraping the simulator")
            gpus = 'count(DCGM_FI_DEV_GPU_UTIL{job="gpu-exporter"}) == 24'  # 8 GPUs x 3 endpoint targets
            wait_for(lambda: query(url, gpus), 30, "Prometheus scraping the DCGM page per endpoint")
            _traffic(sim.base_url, 1)  # creates the series; rates need increments after the first sample
            every = f"count(vllm:e2e_request_latency_seconds_count) >= {len(endpoints)}"
            wait_for(lambda: query(url, every), 30, "first requests scraped on every endpoint target")
            _traffic(sim.base_url, 5)
            rising = f"count(rate(vllm:e2e_request_latency_seconds_count[1m]) > 0) >= {len(endpoints)}"
            wait_for(lambda: query(url, rising), 30, "rates on every endpoint target")
            # the SLO groups count what the counters add after their first reading: traffic goes on
            with _steady_traffic(sim.base_url):
                yield url, model


def _fast_slo_groups(tmp: Path) -> list[str]:
    """The generated rule files, their SLO groups evaluated every 5 s instead of every minute: a
    window's events are the sum of its step records, and the first step needs a reading before it."""
    out = []
    for path in sorted((REPO / "alerts").glob("*.rules.yml")):
        doc = yaml.safe_load(path.read_text())
        for g in doc["groups"]:
            if g["name"].startswith("m3mon-slo-"):
                g["interval"] = "5s"
        (tmp / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))
        out.append(str(tmp / path.name))
    return out


@contextmanager
def _steady_traffic(base_url: str, every: float = 2.0) -> Iterator[None]:
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            with contextlib.suppress(httpx.HTTPError):
                _traffic(base_url, 1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(35)


def _traffic(base_url: str, n: int) -> None:
    body = {
        "model": "MiniMaxAI/MiniMax-M3",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "Say hello in one short sentence."}],
    }
    with httpx.Client(timeout=30) as c:
        for _ in range(n):
            c.post(f"{base_url}/v1/chat/completions", json=body).raise_for_status()


def _numeric(result: list[Any]) -> bool:
    return bool(result) and re.fullmatch(r"[-+.0-9e]+", str(result[0]["value"][1])) is not None


def _expand(expr: str) -> str:
    for k in sorted(GRAFANA_VARS, key=len, reverse=True):
        expr = expr.replace(k, GRAFANA_VARS[k])
    return expr


def _dashboard_exprs() -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted((REPO / "dashboards").glob("*.json")):
        d = json.loads(path.read_text())
        for p in d["panels"]:
            if p.get("targets"):
                out[(d["uid"], p["title"])] = [_expand(t["expr"]) for t in p["targets"]]
        for a in d["annotations"]["list"]:
            out[(d["uid"], "annotation " + a["name"])] = [a["expr"]]
    return out


def _rules() -> list[dict[str, Any]]:
    rules = []
    for path in sorted((REPO / "alerts").glob("*.rules.yml")):
        for g in yaml.safe_load(path.read_text())["groups"]:
            rules += g["rules"]
    return rules


def test_every_rule_expression_parses_and_runs(prom: tuple[str, Model]) -> None:
    url, _ = prom
    for rule in _rules():
        query(url, rule["expr"])


def test_every_dashboard_expression_parses_and_runs(prom: tuple[str, Model]) -> None:
    url, _ = prom
    exprs = _dashboard_exprs()
    assert len(exprs) > 50
    for exprs_of_panel in exprs.values():
        for expr in exprs_of_panel:
            query(url, expr)


def test_listed_panels_have_data(prom: tuple[str, Model]) -> None:
    url, _ = prom
    exprs = _dashboard_exprs()
    for key in PANELS_WITH_DATA:
        wait_for(lambda k=key: any(query(url, e) for e in exprs[k]), 20, f"data on panel {key}")


def test_listed_records_have_data_and_quiet_alerts_stay_quiet(prom: tuple[str, Model]) -> None:
    url, _ = prom
    rules = _rules()
    for name, cls, slo in RECORDS_WITH_DATA:
        rule = next(
            r
            for r in rules
            if r.get("record") == name and r["labels"]["class"] == cls and r["labels"]["slo"] == slo
        )
        wait_for(lambda r=rule: _numeric(query(url, r["expr"])), 20, f"{name} {cls}/{slo} to have a value")
    for alert in ALERTS_QUIET:
        rule = next(r for r in rules if r.get("alert") == alert)
        assert query(url, rule["expr"]) == [], alert


# --- the SLO overview's table: one row per SLO, every column from what the rules record ---------


def _config_slos() -> dict[tuple[str, str], tuple[float, str]]:
    """examples/monitor.yaml's SLOs, read from the file: (class, slo) -> (objective ratio, source)."""
    config = yaml.safe_load((REPO / "examples" / "monitor.yaml").read_text())
    return {(c["name"], s["name"]): (s["objective"] / 100, s["source"])
            for c in config["request_classes"] for s in c["slos"]}  # fmt: skip


def _overview() -> dict[str, Any]:
    return json.loads((REPO / "dashboards" / "m3mon-slo-overview.json").read_text())


def _rows_at(url: str, expr: str, at: float) -> dict[tuple[str, str], float]:
    """``{(class, slo): value}`` of ``expr`` at ``at``; every series labelled exactly class, slo, sli
    (Grafana's merge transformation joins the table's queries on their labels)."""
    body = localhttp.get(f"{url}/api/v1/query", params={"query": expr, "time": at}, timeout=10).json()
    assert body["status"] == "success", f"{expr!r}: {body.get('error')}"
    out = {}
    for r in body["data"]["result"]:
        assert set(r["metric"]) == {"class", "slo", "sli"}, (expr[:80], r["metric"])
        out[(r["metric"]["class"], r["metric"]["slo"])] = float(r["value"][1])
    return out


def test_overview_table_has_a_row_per_slo_and_its_columns_have_data(prom: tuple[str, Model]) -> None:
    url, _ = prom
    slos = _config_slos()
    server = {k for k, (_, source) in slos.items() if source == "server"}  # traffic flows to these
    table = next(p for p in _overview()["panels"] if p["type"] == "table")
    exprs = {t["legendFormat"]: _expand(t["expr"]) for t in table["targets"]}
    assert all(t["format"] == "table" and t["instant"] for t in table["targets"])
    for column in ("sli_now", "budget", "burn1h", "burn6h"):
        wait_for(lambda c=column: server <= query_rows(url, exprs[c]).keys(), 30, f"{column} of server SLOs")
    at = time.time()
    rows = {column: _rows_at(url, expr, at) for column, expr in exprs.items()}
    assert rows["objective"] == pytest.approx({k: objective for k, (objective, _) in slos.items()})
    assert rows["status"].keys() == slos.keys()
    for key, status in rows["status"].items():
        assert status in (-1, 0, 1, 2, 3), key
        assert (status == -1) == (key not in rows["budget"]), key  # no data: the period holds no events
    for key, budget in rows["budget"].items():
        objective = slos[key][0]  # SLI = 1 - error ratio; budget left = 1 - error ratio / (1 - objective)
        assert rows["sli_now"][key] == pytest.approx(1 - (1 - budget) * (1 - objective), abs=1e-9), key
        assert 0 <= rows["sli_now"][key] <= 1 and rows["burn1h"][key] >= 0 and rows["burn6h"][key] >= 0
    stats = {
        p["title"]: _expand(p["targets"][0]["expr"]) for p in _overview()["panels"] if p["type"] == "stat"
    }
    assert float(query(url, stats["SLOs"])[0]["value"][1]) == len(slos)
    assert all(_numeric(query(url, expr)) for expr in stats.values())


def query_rows(url: str, expr: str) -> dict[tuple[str, str], float]:
    return {(r["metric"]["class"], r["metric"]["slo"]): float(r["value"][1]) for r in query(url, expr)}
