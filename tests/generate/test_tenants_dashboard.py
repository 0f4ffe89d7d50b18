"""The tenants dashboard's tables on a real Prometheus: the worst tenants, in order, from the rules.

A real Prometheus loads the generated SLO rules of a configuration with a goodput SLO per tenant
(the simulator's skewed tenants, :class:`~monitor.sim.tenants.TenantMix`) and scrapes a page of
``m3mon_traffic_requests_total`` counters: zero, then each tenant's requests and bad requests of
the mix's draw. The oracle is that draw: per tenant, budget left = 1 − (bad / total) / (1 −
objective) and SLI = 1 − bad / total (docs/slo-events.md; every event lies in the period). The
dashboard's queries (as generated, the template variables set as Grafana would) must return the
ten tenants with the least budget left, least first, with the oracle's figures in every column;
the full table every tenant; the SLO overview's table none of them.
"""

from __future__ import annotations

import dataclasses
import json
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from monitor import conventions as cv
from monitor.generate.dashboards import all_dashboards, overview
from monitor.generate.dashboards import tenants as board
from monitor.generate.prometheus_config import prometheus_config
from monitor.generate.rules import rule_file
from monitor.generate.slo_rules import slo_groups
from monitor.model import Model, load_model
from monitor.sim.tenants import TenantMix
from tests.generate.conftest import REPO
from tests.generate.test_dashboards import _schema
from tests.support.exposition import serving
from tests.support.prometheus import free_port, query, running_prometheus, wait_for

pytestmark = [pytest.mark.real, pytest.mark.timeout(90)]

MIX = TenantMix(tail=12, seed=5)  # 3 heavy, slowco, 12 tail tenants
TENANTS = MIX.tenants()
REQUESTS = 4000
OBJECTIVE = 0.99
VARS = {"$class": ".*", f"${cv.L_DECLARED_SLO}": "goodput"}


def _config(tmp: Path) -> Model:
    path = tmp / "monitor.yaml"
    path.write_text(f"""\
version: m3mon/v1
endpoints:
  - {{name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}}
traffic:
  tenants: [{", ".join(TENANTS)}]
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {{name: goodput-all, sli: goodput, objective: 99, source: traffic}}
      - {{name: goodput, sli: goodput, objective: 99, source: traffic, tenants: [{", ".join(TENANTS)}]}}
""")
    return load_model(path)


def _draw() -> dict[str, tuple[int, int]]:
    """Per tenant (requests, bad) of the mix: the slow tenant misses often, the others now and then."""
    rng = random.Random(2)
    out = {t: (0, 0) for t in TENANTS}
    for r in MIX.requests(REQUESTS):
        bad = rng.random() < (
            0.3 if r.tenant == MIX.slow else 0.004 + 0.01 * (sum(map(ord, r.tenant)) % 3 == 0)
        )
        total, nbad = out[r.tenant]
        out[r.tenant] = (total + 1, nbad + bad)
    return {t: v for t, v in out.items() if v[0]}


def _page(counts: dict[str, tuple[int, int]], zero: bool) -> bytes:
    lines = ["# TYPE m3mon_traffic_requests_total counter", "# TYPE process_start_time_seconds gauge",
             "process_start_time_seconds 1.7e9"]  # fmt: skip
    for tenant, (total, bad) in counts.items():
        for good, n in (("true", total - bad), ("false", bad)):
            labels = f'endpoint="ep",class="chat",tenant="{tenant}",priority="all",good="{good}"'
            lines.append(f"{cv.TRAFFIC_TOTAL}{{{labels}}} {0 if zero else n}")
    return ("\n".join(lines) + "\n").encode()


@dataclasses.dataclass
class Live:
    url: str
    model: Model
    counts: dict[str, tuple[int, int]]


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    counts, state = _draw(), {"zero": True}
    with tempfile.TemporaryDirectory() as tmp, serving(lambda: _page(counts, state["zero"])) as page:
        model = dataclasses.replace(_config(Path(tmp)), exporter_listen=page)
        doc = yaml.safe_load(rule_file(slo_groups(model), model.alerting, "test"))
        for g in doc["groups"]:
            g["interval"] = "1s"
        (Path(tmp) / "slo.rules.yml").write_text(yaml.safe_dump(doc))
        cfg = prometheus_config(model, [str(Path(tmp) / "slo.rules.yml")], f"127.0.0.1:{free_port()}", 1.0)
        with running_prometheus(cfg, Path(tmp)) as url:
            read = f'count({cv.slo_cumulative_events_record("valid")}{{{cv.L_DECLARED_SLO}="goodput"}})'
            wait_for(lambda: query(url, f"{read} == {len(counts)}"), 30, "the rules' first reading")
            state["zero"] = False
            budgets = f'count({cv.SLO_BUDGET_REMAINING_RECORD}{{{cv.L_DECLARED_SLO}="goodput"}})'
            wait_for(lambda: query(url, f"{budgets} == {len(counts)}"), 30, "every tenant's budget")
            yield Live(url, model, counts)


def _expand(expr: str) -> str:
    for k in sorted(VARS, key=len, reverse=True):
        expr = expr.replace(k, VARS[k])
    return expr


def _oracle(live: Live) -> dict[str, tuple[float, float]]:
    """Per tenant (budget left, SLI) from the draw."""
    budget = round(1 - OBJECTIVE, 12)
    return {t: (1 - (bad / total) / budget, 1 - bad / total) for t, (total, bad) in live.counts.items()}


def _panel(live: Live, title: str) -> list[str]:
    d = all_dashboards(live.model)[board.UID]
    panel = next(p for p in d["panels"] if p.get("title") == title)
    return [_expand(t["expr"]) for t in panel["targets"]]


def _values(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {r["metric"][cv.L_TENANT]: float(r["value"][1]) for r in rows}


def test_the_ten_worst_in_order_with_the_oracles_figures(live: Live) -> None:
    budget_q, sli_q, burn_q = _panel(live, f"The {board.WORST} with the least budget left")
    oracle = _oracle(live)
    rows = query(live.url, budget_q)
    shown = [r["metric"][cv.L_TENANT] for r in rows]
    assert len(shown) == board.WORST
    got = [float(r["value"][1]) for r in rows]
    assert got == sorted(got)  # sort(): least budget first, as Prometheus returns it
    assert got == pytest.approx([oracle[t][0] for t in shown], abs=1e-9)
    cut = got[-1]
    assert all(oracle[t][0] >= cut - 1e-9 for t in oracle if t not in shown)  # no worse tenant left out
    assert shown[0] == MIX.slow
    assert {r["metric"][cv.L_DECLARED_SLO] for r in rows} == {"goodput"}
    sli = _values(query(live.url, sli_q))
    assert set(sli) == set(shown)
    assert all(sli[t] == pytest.approx(oracle[t][1], abs=1e-9) for t in shown)
    burn = _values(query(live.url, burn_q))
    assert set(burn) == set(shown)  # the 1h ratio: every event lies in the last hour
    assert all(burn[t] == pytest.approx((1 - oracle[t][1]) / 0.01, abs=1e-6) for t in burn)


def test_the_full_table_has_every_tenant_and_the_overview_none(live: Live) -> None:
    budget_q = _panel(live, "Every tenant and band, least budget left first")[0]
    assert set(_values(query(live.url, budget_q))) == set(live.counts)
    d = all_dashboards(live.model)[overview.UID]
    table = next(p for p in d["panels"] if p.get("type") == "table")
    for t in table["targets"]:
        slos = {
            r["metric"].get(cv.L_SLO) for r in query(live.url, _expand(t["expr"]).replace("$class", ".*"))
        }
        assert slos <= {"goodput-all"}, t["expr"]
    assert json.dumps(d).count("goodput.") == 0


def test_the_dashboard_validates_and_exists_only_with_tenants(tmp_path: Path) -> None:
    model = _config(tmp_path)
    d = all_dashboards(model)[board.UID]
    assert not list(jsonschema.Draft7Validator(_schema()).iter_errors(d))
    assert {v["name"] for v in d["templating"]["list"]} == {"datasource", "class", cv.L_DECLARED_SLO}
    assert board.UID not in all_dashboards(load_model(REPO / "examples" / "monitor.yaml"))
