"""The Tenants section: per-tenant and per-band SLOs, the ten worst first, in every format.

A week of real traffic from the simulator's skewed tenants (:class:`~monitor.sim.tenants.TenantMix`:
a few heavy tenants, a long Zipf tail, one slow tenant) is judged into the store through the
service's own slice path (:func:`monitor.slo.traffic.traffic_slices`), for 100 named tenants × two
SLOs, two priority bands and a tenant × band SLO. The oracle is the mix's own draw: per tenant and
band, how many requests were sent and how many were bad; attainment is good / total and the budget
left 1 − (bad / total) / (1 − objective) (docs/slo-events.md; every event lies in the period). The
report must show, in HTML, Markdown and JSON alike, the same figures for each shown tenant, the
worst first, count the rest truthfully, and keep the per-tenant SLOs out of the SLO table.
"""

from __future__ import annotations

import html
import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from monitor import events
from monitor.model import Model
from monitor.report import display, slack
from monitor.report.generate import Rendered
from monitor.sim.tenants import TenantMix
from monitor.slo.traffic import Judged, traffic_slices
from monitor.store.ops import Op, slices_op
from tests.report.stores import WEEK, rendered, stored

MIX = TenantMix(tail=96, seed=7)  # 3 heavy + slowco + 96 tail = 100 tenants
TENANTS = MIX.tenants()
REQUESTS_PER_DAY = 3000
DAYS = 5  # Monday to Friday: the week's last day holds no events (no "last day" burn)
OBJECTIVE = 0.99
PAIR = ["acme", "slowco"]  # the tenant × band SLO's tenants


def _config() -> str:
    return f"""\
version: m3mon/v1
endpoints:
  - {{name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}}
traffic:
  tenants: [{", ".join(TENANTS)}]
  priority_bands: [{{name: high, up_to: -1}}, {{name: normal}}]
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {{name: availability, sli: availability, objective: 99, source: probes}}
      - {{name: goodput-all, sli: goodput, objective: 99, source: traffic}}
      - {{name: goodput, sli: goodput, objective: 99, source: traffic, tenants: [{", ".join(TENANTS)}, other]}}
      - {{name: goodput-strict, sli: goodput, objective: 99.9, source: traffic, tenants: [{", ".join(TENANTS)}]}}
      - {{name: goodput-band, sli: goodput, objective: 99, source: traffic, priorities: [high, normal]}}
      - {{name: goodput-pair, sli: goodput, objective: 99, source: traffic, tenants: [{", ".join(PAIR)}],
          priorities: [high, normal]}}
report: {{timezone: UTC}}
"""


def _bad_share(tenant: str, rng: random.Random) -> float:
    """How often a tenant's request misses: the slow tenant often, a few tail tenants now and then."""
    if tenant == MIX.slow:
        return 0.4
    return 0.03 if rng.random() < 0.15 else 0.001


@dataclass(frozen=True)
class Week:
    model: Model
    out: Rendered
    sent: Counter[tuple[str, str]]  # (tenant, band) -> requests
    bad: Counter[tuple[str, str]]


def _judged(rng: random.Random, shares: dict[str, float], day: int) -> tuple[list[Judged], list[Any]]:
    reqs = TenantMix(tail=MIX.tail, seed=MIX.seed + day).requests(REQUESTS_PER_DAY)
    out, truth = [], []
    for r in reqs:
        band = "high" if r.priority <= -1 else "normal"
        good = rng.random() >= shares[r.tenant]
        out.append(Judged("ep", "chat", events.traffic_labels(r.tenant, band, good)))
        truth.append((r.tenant, band, good))
    return out, truth


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Week:
    rng = random.Random(11)
    shares = {t: _bad_share(t, rng) for t in TENANTS}
    sent: Counter[tuple[str, str]] = Counter()
    bad: Counter[tuple[str, str]] = Counter()

    def ops(model: Model) -> list[Op]:
        out = []
        for day in range(DAYS):
            judged, truth = _judged(rng, shares, day)
            for tenant, band, good in truth:
                sent[(tenant, band)] += 1
                bad[(tenant, band)] += 0 if good else 1
            at = WEEK.start.timestamp() + day * 86400 + 43200
            out.append(slices_op(traffic_slices(model, judged, at)))
        return out

    model, url = stored(tmp_path_factory.mktemp("tenants"), _config(), ops)
    return Week(model, rendered(model, url), sent, bad)


def _oracle(w: Week, tenant: str | None, band: str | None, objective: float) -> tuple[int, int, float, float]:
    """(requests, bad, attainment, budget left) of one tenant and/or band, from the mix's draw."""
    keys = [k for k in w.sent if (tenant is None or k[0] == tenant) and (band is None or k[1] == band)]
    total, bad = sum(w.sent[k] for k in keys), sum(w.bad[k] for k in keys)
    return total, bad, (total - bad) / total, 1 - (bad / total) / round(1 - objective, 12)


def _doc(w: Week) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(w.out.json)
    return doc


def _tables(w: Week) -> dict[str, dict[str, Any]]:
    return {f"{t['slo']}:{t['scope']}": t for t in _doc(w)["tenants"]}


def test_each_shown_tenant_has_the_oracles_figures(week: Week) -> None:
    tables = _tables(week)
    assert set(tables) == {"goodput:tenant", "goodput-strict:tenant", "goodput-band:priority",
                           "goodput-pair:tenant_priority"}  # fmt: skip
    for t in tables.values():
        for row in t["worst"]:
            objective = row["objective"]
            total, bad, attained, left = _oracle(week, row["tenant"], row["priority"], objective)
            assert row["total"] == total and row["total"] - row["good"] == bad, row["slo"]
            assert row["attainment"] == pytest.approx(attained, abs=1e-12)
            assert row["budget_remaining"] == pytest.approx(left, abs=1e-9)
            assert (row["status"] == "missed") == (attained < objective or left <= 0), row["slo"]


def _key(budget: float | None, attainment: float | None) -> tuple[bool, float, bool, float]:
    return (budget is None, budget or 0.0, attainment is None, attainment or 0.0)


def test_the_worst_come_first_and_the_rest_are_counted(week: Week) -> None:
    tables, every = _tables(week), {s["slo"]: s for c in _doc(week)["classes"] for s in c["slos"]}
    t = tables["goodput:tenant"]
    assert t["count"] == len(TENANTS) + 1 and len(t["worst"]) == 10 and t["more"] == len(TENANTS) + 1 - 10
    names = {r["slo"] for r in t["worst"]}
    shown = [_key(r["budget_remaining"], r["attainment"]) for r in t["worst"]]
    assert shown == sorted(shown)
    rest = [s for n, s in every.items() if n.startswith("goodput.") and n not in names]
    assert len(rest) == t["more"]
    assert all(shown[-1] <= _key(s["budget_remaining"], s["attainment"]) for s in rest)
    assert sum(t["more_status"].values()) == t["more"]
    assert Counter(s["status"] for s in rest) == Counter(t["more_status"])
    oracle_worst = min(TENANTS, key=lambda x: _oracle(week, x, None, OBJECTIVE)[3])
    assert t["worst"][0]["tenant"] == oracle_worst == MIX.slow


def test_a_tenants_figures_are_one_in_every_format(week: Week) -> None:
    """The tenants table's row equals that SLO's own row (report.json's classes) and reads the
    same digits in Markdown and HTML."""
    every = {s["slo"]: s for c in _doc(week)["classes"] for s in c["slos"]}
    md = week.out.markdown.split("## Tenants")[1].split("\n## ")[0]
    page = html.unescape(re.sub(r"<[^>]+>", " ", week.out.html.split('id="tenants"')[1].split("<h2")[0]))
    page = " ".join(page.split())
    for t in _doc(week)["tenants"]:
        section = md.split(f"### {t['class']} / {t['slo']}: ")[1].split("###")[0]
        assert len([line for line in section.splitlines() if line.startswith("| ")]) == 2 + len(t["worst"])
        for row in t["worst"]:
            own = every[row["slo"]]
            for key in ("attainment", "budget_remaining", "good", "total", "status"):
                assert row[key] == own[key], (row["slo"], key)
            who = " / ".join(p for p in (row["tenant"], row["priority"]) if p)
            cells = [display.attainment(row["attainment"]), display.budget(row["budget_remaining"]),
                     display.count(row["total"]), display.status(row["status"])]  # fmt: skip
            md_row = next(line for line in section.splitlines() if line.startswith(f"| {who} |"))
            assert all(f"| {c} |" in md_row for c in cells), md_row
            assert " ".join([who, cells[0]]) in page and cells[1] in page


def test_the_slo_table_folds_per_tenant_slos(week: Week) -> None:
    slo_md = week.out.markdown.split("## SLOs by request class")[1].split("\n## ")[0]
    rows = [line for line in slo_md.splitlines() if line.startswith("| chat |")]
    assert sorted(r.split(" | ")[1] for r in rows) == ["availability", "goodput-all"]
    assert len(week.model.slos) == 2 + (len(TENANTS) + 1) + len(TENANTS) + 2 + 4
    assert week.out.markdown.count("goodput.tail-") <= 2 * 10  # the tenants' tables only
    assert len(week.out.markdown) < 20_000 and len(week.out.html) < 400_000


def test_page_one_names_the_worst_tenant(week: Week) -> None:
    doc = _doc(week)
    assert doc["status"] == "missed" and doc["attention"] == ["chat"]
    scoped = [s for c in doc["classes"] for s in c["slos"] if s["tenant"] or s["priority"]]
    hot = [s for s in scoped if s["status"] in ("missed", "at_risk")]
    worst = min(hot, key=lambda s: s["budget_remaining"])
    assert worst["slo"] == f"goodput-strict.{MIX.slow}"  # the oracle: its budget is the most overspent
    said = f"{len(hot)} of {len(scoped)} missed or at risk (worst {worst['slo']} "
    box = week.out.markdown.split("## In short")[0]
    banner = html.unescape(re.sub(r"<[^>]+>", "", week.out.html.split('class="banner')[1].split("</div>")[0]))
    blocks = json.dumps(slack.payload(week.out.data), ensure_ascii=False)
    for where in (box, " ".join(banner.split()), blocks):
        assert said in where
