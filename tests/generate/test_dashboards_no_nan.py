"""No dashboard panel and no record reads NaN: probes that ran and then went quiet show "no data".

A real Prometheus (the generated scrape config, every 1 s) scrapes the simulator and a monitor
exporter fed with one real round of every probe the example configuration runs (every class,
kind and endpoint, against the simulator). Then nothing more happens: within one rate window the
increments leave every ``rate()``, which is when 0/0 used to reach the panels (means, quantiles,
ratios of classes probed every 5 or 30 minutes look like this most of the time). Every dashboard
expression and every rule expression is range-queried over the whole run (before, during and
after the round) at 1 s steps; no value may be NaN. ``$__rate_interval`` is 10 s here, so the quiet
part comes after seconds instead of minutes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from monitor.exporter import Exporter
from monitor.generate.prometheus_config import prometheus_config
from monitor.model import Model, load_model
from monitor.probes.runner import plan_round, run_probe
from monitor.sim.harness import running_simulator
from tests.generate.conftest import REPO
from tests.support import localhttp
from tests.support.exposition import serving
from tests.support.prometheus import query, running_prometheus, wait_for

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]

RATE = "10s"
GRAFANA_VARS = {"$endpoint": ".*", "$model": ".*", "$class": ".*", "$__rate_interval": RATE,
                "$__interval": RATE, "$__range": RATE}  # fmt: skip


def _expand(expr: str) -> str:
    for k in sorted(GRAFANA_VARS, key=len, reverse=True):
        expr = expr.replace(k, GRAFANA_VARS[k])
    return expr


def _dashboard_exprs() -> dict[str, str]:
    out = {}
    for path in sorted((REPO / "dashboards").glob("*.json")):
        d = json.loads(path.read_text())
        for p in d["panels"]:
            for i, t in enumerate(p.get("targets", [])):
                out[f"{d['uid']} / {p['title']} #{i}"] = _expand(t["expr"])
    return out


def _rule_exprs() -> dict[str, str]:
    out = {}
    for path in sorted((REPO / "alerts").glob("*.rules.yml")):
        for g in yaml.safe_load(path.read_text())["groups"]:
            for i, r in enumerate(g["rules"]):
                out[f"{g['name']} #{i} {r.get('record', r.get('alert'))}"] = r["expr"]
    return out


def _round(model: Model, exporter: Exporter) -> int:
    """One real round of every probe of ``model``, observed by ``exporter``; how many ran."""

    async def go() -> int:
        async with httpx.AsyncClient() as client:
            results = await asyncio.gather(*(run_probe(p, client) for p in plan_round(model)))
        exporter.probes.observe_all(results)
        return len(results)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def run() -> Iterator[tuple[str, float, float]]:
    """(Prometheus URL, start, end of the observed run)."""
    base = load_model(REPO / "examples" / "monitor.yaml")
    with running_simulator() as sim, tempfile.TemporaryDirectory(prefix="m3mon-nan-") as tmp:
        endpoints = tuple(dataclasses.replace(e, base_url=sim.base_url) for e in base.endpoints)
        exporter = Exporter(dataclasses.replace(base, endpoints=endpoints))
        with serving(exporter.render) as address:
            model = dataclasses.replace(base, endpoints=endpoints, exporter_listen=address)
            rules = [str(p) for p in sorted((REPO / "alerts").glob("*.rules.yml"))]
            cfg = prometheus_config(model, rules, interval=1.0)
            cfg["scrape_configs"][-1].pop("basic_auth", None)  # the page here asks for no password
            with running_prometheus(cfg, Path(tmp)) as url:
                wait_for(lambda: query(url, "count(up == 1) >= 2"), 30, "Prometheus scraping both jobs")
                start = time.time()
                time.sleep(3)  # the exporter's zero series are scraped before the round adds to them
                assert _round(model, exporter) > 10
                time.sleep(15)  # the round's increments leave every 10 s rate window
                yield url, start, time.time()


def _nan_at(url: str, expr: str, start: float, end: float) -> list[str]:
    response = localhttp.get(f"{url}/api/v1/query_range",
                         params={"query": expr, "start": start, "end": end, "step": 1}, timeout=30)  # fmt: skip
    body = response.json()
    assert body["status"] == "success", f"{expr!r}: {body.get('error')}"
    return [
        f"{series['metric']} at +{float(t) - start:.0f}s"
        for series in body["data"]["result"]
        for t, v in series["values"]
        if v.lower() in ("nan", "-nan")
    ][:1]


def _nan_panels(url: str, exprs: dict[str, str], start: float, end: float) -> list[str]:
    return [f"{key}: {nan[0]}" for key, expr in exprs.items() if (nan := _nan_at(url, expr, start, end))]


def test_no_dashboard_panel_reads_nan(run: tuple[str, float, float]) -> None:
    url, start, end = run
    assert query(url, 'sum(m3mon_probe_total{job="m3mon"}) > 10'), "the round reached Prometheus"
    found = _nan_panels(url, _dashboard_exprs(), start, end)
    assert not found, "\n".join(found)


@pytest.mark.slow  # ~30 s of instant queries; every rule expression also runs in test_prometheus_e2e
def test_no_rule_expression_reads_nan(run: tuple[str, float, float]) -> None:
    url, start, end = run
    found = _nan_panels(url, _rule_exprs(), start, end)
    assert not found, "\n".join(found)
