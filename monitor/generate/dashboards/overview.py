"""The SLO overview: a table of every SLO, the first dashboard an on-call engineer opens.

One row per SLO (class, SLO, SLI kind): its objective, its SLI over its period, the error budget
left, the burn rate over 1h and 6h and a status, each read from the generated recording rules
(:mod:`monitor.generate.slo_rules`) and from the ``ALERTS`` series Prometheus keeps for the burn
alerts, so the table says what the alerts say. Above it, how many SLOs are burning, out of budget
or without data. Each row links to its class's SLO dashboard and to the vLLM engine dashboard
opened on the class's pool.
"""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.dashboards.common import SLO_SEL, dashboard
from monitor.generate.dashboards.engine import UID as ENGINE_UID
from monitor.generate.dashboards.fleet import SLO_UID
from monitor.generate.dashboards.panels import Layout, Query, stat, table, targets, timeseries
from monitor.model import Model
from monitor.slo import burn

UID = "m3mon-slo-overview"

#: The row's status, worst last: a value mapping turns each into its word and colour.
NO_DATA, OK, TICKET, EXHAUSTED, PAGE = -1, 0, 1, 2, 3
STATUS_TEXT = {
    NO_DATA: ("No data", "text"),
    OK: ("OK", "green"),
    TICKET: ("Burning (ticket)", "orange"),
    EXHAUSTED: ("Budget exhausted", "red"),
    PAGE: ("Burning (page)", "dark-red"),
}
#: The table's columns after the merge: query legend -> shown title.
COLUMNS = {
    "class": "Class",
    "slo": "SLO",
    "sli": "SLI kind",
    "objective": "Objective",
    "sli_now": "SLI (period)",
    "budget": "Budget left",
    "burn1h": "Burn 1h",
    "burn6h": "Burn 6h",
    "status": "Status",
}
_BY = f"{cv.L_CLASS}, {cv.L_SLO}, {cv.L_SLI}"
#: The table's SLOs: those declared for a class's whole traffic (the SLOs declared per tenant or
#: band, a hundred per declaration at times, are on the tenants dashboard).
OWN = f'{{{cv.L_CLASS}=~"$class",{cv.L_DECLARED_SLO}=""}}'


def _alerts(name: str) -> str:
    return f'ALERTS{{alertname="{name}",alertstate="firing",{cv.L_CLASS}=~"$class",{cv.L_DECLARED_SLO}=""}}'


def _periods(model: Model) -> list[str]:
    return sorted({s.period_window for s in model.slos})


def _sli_now(model: Model) -> str:
    """1 − the error ratio over each SLO's own period (each SLO has one period record)."""
    ratios = " or ".join(cv.sli_error_ratio_record(p) + OWN for p in _periods(model))
    return f"1 - max by ({_BY}) ({ratios})"


def _burn(window: str) -> str:
    budget = f"(1 - {cv.SLO_META_OBJECTIVE_RECORD}{OWN})"
    ratio = cv.sli_error_ratio_record(window) + OWN
    return f"max by ({_BY}) ({ratio}\n/ on ({_BY}) {budget})"  # one-to-one ``on``: keeps only these


def _state(expr: str, value: int) -> str:
    return f'label_replace({expr}, "state", "{value}", "", "")'


def status_expr() -> str:
    """Per SLO the worst of: no data yet, OK, ticket burn firing, budget exhausted, page burn firing."""
    budget = cv.SLO_BUDGET_REMAINING_RECORD + OWN
    parts = [
        _state(f"{NO_DATA} + 0 * {cv.SLO_META_OBJECTIVE_RECORD}{OWN}", NO_DATA),
        _state(f"{OK} * {budget}", OK),
        _state(f"{TICKET} * max by ({_BY}) ({_alerts(cv.ALERT_BURN_TICKET)})", TICKET),
        _state(f"{EXHAUSTED} + 0 * ({budget} <= 0)", EXHAUSTED),
        _state(f"{PAGE} * max by ({_BY}) ({_alerts(cv.ALERT_BURN_PAGE)})", PAGE),
    ]
    return f"max by ({_BY}) (\n  " + "\n  or ".join(parts) + "\n)"


def table_queries(model: Model) -> list[Query]:
    """The table's instant queries, one per value column, each one series per SLO."""
    return [
        Query(f"max by ({_BY}) ({cv.SLO_META_OBJECTIVE_RECORD}{OWN})", "objective"),
        Query(_sli_now(model), "sli_now"),
        Query(f"max by ({_BY}) ({cv.SLO_BUDGET_REMAINING_RECORD}{OWN})", "budget"),
        Query(_burn("1h"), "burn1h"),
        Query(_burn("6h"), "burn6h"),
        Query(status_expr(), "status"),
    ]


def _by_name(name: str, props: list[dict[str, Any]]) -> dict[str, Any]:
    return {"matcher": {"id": "byName", "options": COLUMNS[name]}, "properties": props}


def _steps(*steps: tuple[str, float | None]) -> dict[str, Any]:
    return {"id": "thresholds", "value": {"mode": "absolute",
                                          "steps": [{"color": c, "value": v} for c, v in steps]}}  # fmt: skip


_COLOURED = {"id": "custom.cellOptions", "value": {"type": "color-background", "mode": "basic"}}


def _page_factor(model: Model, long_window: str) -> float:
    """The lowest page factor over ``long_window`` among the SLOs: the Burn column turns red there."""
    rows = [b for b in cv.BURN_ALERTS if b.severity == "page" and b.long_window == long_window]
    return min(burn.factor(s, b) for s in model.slos for b in rows)


def _links() -> list[dict[str, Any]]:
    cls = "${__data.fields.class}"  # the label column (its display name is Class)
    return [
        {"title": f"SLOs of {cls}", "url": f"/d/{SLO_UID}/?var-class={cls}&${{__url_time_range}}"},
        {"title": f"vLLM engine: the pool of {cls}",
         "url": f"/d/{ENGINE_UID}/?var-class={cls}&${{__url_time_range}}"},
    ]  # fmt: skip


def overrides(model: Model) -> list[dict[str, Any]]:
    ratio: list[dict[str, Any]] = [{"id": "unit", "value": "percentunit"}, {"id": "decimals", "value": 3}]
    mappings = [
        {"type": "value", "options": {str(v): {"text": t, "color": c, "index": i}
                                      for i, (v, (t, c)) in enumerate(STATUS_TEXT.items())}}
    ]  # fmt: skip
    out = [
        _by_name("class", [{"id": "links", "value": _links()}]),
        _by_name("slo", [{"id": "links", "value": _links()}]),
        _by_name("objective", ratio),
        _by_name("sli_now", ratio),
        _by_name("budget", [*ratio, _steps(("red", None), ("orange", 0.0), ("green", 0.25)), _COLOURED]),
        _by_name("status", [{"id": "mappings", "value": mappings}, _COLOURED]),
    ]
    for window in ("1h", "6h"):
        red = _page_factor(model, window)
        steps = _steps(("green", None), ("orange", 1.0), ("red", red))
        out.append(_by_name(f"burn{window}", [{"id": "decimals", "value": 2}, steps, _COLOURED]))
    return out


def transformations(queries: list[Query]) -> list[dict[str, Any]]:
    """Merge the per-query tables on their labels, then name and order the columns (Grafana names
    the value column of query ``A`` ``Value #A``)."""
    pairs = zip(queries, targets(queries), strict=True)
    values = {f"Value #{target.refId}": COLUMNS[q.legend] for q, target in pairs}
    labels = {k: COLUMNS[k] for k in (cv.L_CLASS, cv.L_SLO, cv.L_SLI)}
    rename = {**labels, **values}
    return [
        {"id": "merge", "options": {}},
        {"id": "organize", "options": {"excludeByName": {"Time": True}, "renameByName": rename,
                                       "indexByName": {shown: i for i, shown in enumerate(rename.values())}}},
        {"id": "sortBy", "options": {"sort": [{"field": COLUMNS["status"], "desc": True}]}},
    ]  # fmt: skip


def _stats(lay: Layout) -> None:
    def firing(*names: str) -> str:
        alerts = f'ALERTS{{alertname{q.regex(names)},alertstate="firing",{cv.L_CLASS}=~"$class"}}'
        return f"count(max by ({_BY}) ({alerts})) or vector(0)"

    budget = cv.SLO_BUDGET_REMAINING_RECORD + SLO_SEL
    for title, expr in (
        ("SLOs", f"count({cv.SLO_META_OBJECTIVE_RECORD}{SLO_SEL}) or vector(0)"),
        ("SLOs burning (burn alert firing)", firing(cv.ALERT_BURN_PAGE, cv.ALERT_BURN_TICKET)),
        ("SLOs out of budget", f"count({budget} <= 0) or vector(0)"),
        ("SLOs without data (SLOMetricAbsent)", firing(cv.ALERT_METRIC_ABSENT)),
    ):
        steps: list[dict[str, Any]] = [{"color": "green", "value": None}]
        if title != "SLOs":  # any SLO burning, out of budget or without data: red
            steps.append({"color": "red", "value": 1})
        lay.add(stat(title, [Query(expr)], thresholds=steps, colorMode="background"), w=6, h=4)


def build(model: Model, banner: str) -> dict[str, Any]:
    lay = Layout()
    lay.row("Every SLO")
    _stats(lay)
    queries = table_queries(model)
    lay.add(
        table(
            "SLOs: objective, SLI, budget left, burn rate, status",
            queries,
            transformations(queries),
            overrides(model),
            description=(
                "SLI (period) is 1 − the error ratio over the SLO's period; budget left is the share of "
                "that period's error budget not spent; burn is the error ratio over the window ÷ the "
                "budget (1 = spending exactly the budget). Status: the worst of a firing page or ticket "
                "burn alert and an exhausted budget; no data while the period holds no events. Click a "
                "class or SLO for its SLO dashboard or the vLLM engine of its pool. SLOs declared per "
                "tenant or priority band are on the tenants dashboard (link above), worst first."
            ),
        ),
        w=24,
        h=max(8, 3 + sum(s.tenant is None and s.priority is None for s in model.slos)),
    )
    lay.add(
        timeseries(
            "Error budget left",
            [Query(f"{cv.SLO_BUDGET_REMAINING_RECORD}{OWN}", "{{class}} {{slo}}")],
            unit="percentunit",
        ),
        w=24,
    )
    return dashboard(model, UID, "M3 / SLO overview", lay, banner, ("class", "endpoint"))
