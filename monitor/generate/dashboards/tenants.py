"""The tenants dashboard: the SLOs declared per tenant or priority band, the worst first.

A ``source: traffic`` SLO with ``tenants:`` or ``priorities:`` becomes one SLO per tenant and band;
their records carry ``declared_slo``, ``tenant`` and ``priority`` (:func:`~monitor.generate.slo_rules.
slo_labels`), so the template variables ``class`` and ``declared_slo`` pick one declaration's
tenants. Its first table holds the ten with the least budget left (``bottomk``; the other columns
are kept to the same ten with ``and on``), its second every one of them; both are sorted by budget
left, least first (for SLOs of one declaration, the lowest SLI first too). Burn 1h is the 1 h error
ratio ÷ the budget, as on the SLO overview, whose table leaves these SLOs out. Built only for a
configuration that declares such SLOs.
"""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate.dashboards.common import dashboard
from monitor.generate.dashboards.fleet import SLO_UID
from monitor.generate.dashboards.panels import Layout, Query, stat, table, targets, timeseries
from monitor.model import Model

UID = "m3mon-tenants"
#: How many tenants the first table shows (the report's Tenants section shows as many).
WORST = 10
#: The table's columns after the merge: query legend or label -> shown title.
COLUMNS = {
    cv.L_CLASS: "Class",
    cv.L_DECLARED_SLO: "Declared SLO",
    cv.L_TENANT: "Tenant",
    cv.L_PRIORITY: "Band",
    cv.L_SLO: "SLO",
    "sli_now": "SLI (period)",
    "budget": "Budget left",
    "burn1h": "Burn 1h",
}
LABELS = (cv.L_CLASS, cv.L_DECLARED_SLO, cv.L_TENANT, cv.L_PRIORITY, cv.L_SLO)
_BY = ", ".join(LABELS)
_ON = f"{cv.L_CLASS}, {cv.L_SLO}"
SEL = f'{{{cv.L_CLASS}=~"$class",{cv.L_DECLARED_SLO}=~"${cv.L_DECLARED_SLO}",{cv.L_DECLARED_SLO}!=""}}'


def has_tenants(model: Model) -> bool:
    return any(s.tenant is not None or s.priority is not None for s in model.slos)


def _budget() -> str:
    return f"max by ({_BY}) ({cv.SLO_BUDGET_REMAINING_RECORD}{SEL})"


def worst() -> str:
    """The :data:`WORST` SLOs with the least budget left (one series each)."""
    return f"bottomk({WORST}, {_budget()})"


def table_queries(model: Model, limit: bool) -> list[Query]:
    """SLI over the period, budget left (sorted, least first), burn 1h; ``limit``: of the worst ten."""
    periods = sorted({s.period_window for s in model.slos if s.tenant is not None or s.priority is not None})
    ratios = " or ".join(cv.sli_error_ratio_record(p) + SEL for p in periods)
    objective = f"(1 - {cv.SLO_META_OBJECTIVE_RECORD}{SEL})"
    # one-to-one ``on`` keeps only the labels it names: every label of the row
    burn = f"max by ({_BY}) ({cv.sli_error_ratio_record('1h')}{SEL}\n/ on ({_BY}) {objective})"
    keep = f"\nand on ({_ON}) {worst()}" if limit else ""
    return [
        Query(f"sort({worst() if limit else _budget()})", "budget"),
        Query(f"1 - max by ({_BY}) ({ratios}){keep}", "sli_now"),
        Query(f"{burn}{keep}", "burn1h"),
    ]


def transformations(queries: list[Query]) -> list[dict[str, Any]]:
    """Merge the queries' tables on their labels, name and order the columns, least budget first."""
    values = {f"Value #{t.refId}": COLUMNS[q.legend] for q, t in zip(queries, targets(queries), strict=True)}
    rename = {**{k: COLUMNS[k] for k in LABELS}, **values}
    order = [*(COLUMNS[k] for k in LABELS), COLUMNS["sli_now"], COLUMNS["budget"], COLUMNS["burn1h"]]
    return [
        {"id": "merge", "options": {}},
        {"id": "organize", "options": {"excludeByName": {"Time": True}, "renameByName": rename,
                                       "indexByName": {shown: i for i, shown in enumerate(order)}}},
        {"id": "sortBy", "options": {"sort": [{"field": COLUMNS["budget"], "desc": False}]}},
    ]  # fmt: skip


def overrides() -> list[dict[str, Any]]:
    ratio: list[dict[str, Any]] = [{"id": "unit", "value": "percentunit"}, {"id": "decimals", "value": 3}]
    steps = {"mode": "absolute", "steps": [{"color": "red", "value": None}, {"color": "orange", "value": 0.0},
                                           {"color": "green", "value": 0.25}]}  # fmt: skip
    coloured = {"id": "custom.cellOptions", "value": {"type": "color-background", "mode": "basic"}}
    link = [{"title": "SLOs of ${__data.fields.class}",
             "url": f"/d/{SLO_UID}/?var-class=${{__data.fields.class}}&${{__url_time_range}}"}]  # fmt: skip

    def by(title: str, props: list[dict[str, Any]]) -> dict[str, Any]:
        return {"matcher": {"id": "byName", "options": title}, "properties": props}

    return [
        by(COLUMNS[cv.L_SLO], [{"id": "links", "value": link}]),
        by(COLUMNS["sli_now"], ratio),
        by(COLUMNS["budget"], [*ratio, {"id": "thresholds", "value": steps}, coloured]),
        by(COLUMNS["burn1h"], [{"id": "decimals", "value": 2}]),
    ]


DESCRIPTION = (
    "One row per SLO declared per tenant or priority band (Tenant, Band) of the chosen class and "
    "declared SLO, least budget left first. SLI (period) is 1 − the error ratio over the SLO's "
    "period; budget left the share of that period's error budget not spent; burn 1h the last hour's "
    "error ratio ÷ the budget (1 = spending exactly the budget). Click an SLO for its class's SLO "
    "dashboard."
)


def _stats(lay: Layout) -> None:
    firing = f'alertname=~"{cv.ALERT_BURN_PAGE}|{cv.ALERT_BURN_TICKET}",alertstate="firing",'
    alerts = "ALERTS{" + firing + SEL[1:]
    red = [{"color": "green", "value": None}, {"color": "red", "value": 1}]
    for title, expr, steps in (
        ("Tenant and band SLOs", f"count({cv.SLO_META_OBJECTIVE_RECORD}{SEL}) or vector(0)", red[:1]),
        ("Out of budget", f"count({cv.SLO_BUDGET_REMAINING_RECORD}{SEL} <= 0) or vector(0)", red),
        ("Burning (burn alert firing)", f"count(max by ({_ON}) ({alerts})) or vector(0)", red),
    ):
        lay.add(stat(title, [Query(expr)], thresholds=steps, colorMode="background"), w=8, h=4)


def build(model: Model, banner: str) -> dict[str, Any]:
    lay = Layout()
    lay.row("Tenants and priority bands")
    _stats(lay)
    for title, limit, h in ((f"The {WORST} with the least budget left", True, 3 + WORST),
                            ("Every tenant and band, least budget left first", False, 16)):  # fmt: skip
        queries = table_queries(model, limit)
        panel = table(title, queries, transformations(queries), overrides(), description=DESCRIPTION)
        lay.add(panel, w=24, h=h)
    budget = f"bottomk({WORST}, {cv.SLO_BUDGET_REMAINING_RECORD}{SEL})"
    lowest = Query(budget, "{{slo}}")
    lay.add(timeseries(f"Error budget left, the {WORST} lowest", [lowest], unit="percentunit"), w=24)
    return dashboard(model, UID, "M3 / Tenants", lay, banner, ("class", cv.L_DECLARED_SLO))
