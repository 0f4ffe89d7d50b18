"""Panel and dashboard building blocks on top of grafanalib, plus the JSON clean-up step.

grafanalib 0.7 still emits some pre-Grafana-8 keys (``rows``, ``style``, ``editable`` on
panels, legacy heatmap options, ``None`` values). :func:`to_json` drops exactly those, so the
output validates against the dashboard schema of ``@grafana/schema`` (see ``tests/schemas``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from grafanalib import core as g
from grafanalib._gen import DashboardEncoder

from monitor import conventions as cv
from monitor.generate import promql
from monitor.generate.provisioning import DATASOURCE_UID

DS: dict[str, str] = {"type": "prometheus", "uid": "${datasource}"}
WIDTH = 24

_LEGACY_DASHBOARD = ("__inputs", "hideControls", "rows", "sharedCrosshair", "style", "gnetId", "id")
_LEGACY_PANEL = (
    "editable",
    "error",
    "span",
    "minSpan",
    "height",
    "cards",
    "color",
    "dataFormat",
    "heatmap",
    "hideZeroBuckets",
    "highlightCards",
    "legend",
    "reverseYBuckets",
    "tooltip",
    "xAxis",
    "yAxis",
    "xBucketNumber",
    "xBucketSize",
    "yBucketBound",
    "yBucketNumber",
    "yBucketSize",
)
#: Keys grafanalib's Table still writes at the panel level (Grafana 7 and older).
_LEGACY_TABLE = ("columns", "fontSize", "mappings", "styles", "sort", "scroll", "transform")
_ROW_KEYS = ("collapsed", "gridPos", "id", "panels", "repeat", "title", "type")
_LEGACY_TEMPLATE = ("auto", "auto_count", "auto_min", "tagValuesQuery", "tagsQuery", "useTags")


@dataclass(frozen=True)
class Query:
    """One PromQL query of a panel and its legend."""

    expr: str
    legend: str = "__auto"
    instant: bool = False


@dataclass
class Layout:
    """Places panels left to right, wrapping at the dashboard width."""

    x: int = 0
    y: int = 0
    row_height: int = 0
    panels: list[Any] = field(default_factory=list)

    def add(self, panel: Any, w: int = 12, h: int = 8) -> None:
        if self.x + w > WIDTH:
            self.x, self.y, self.row_height = 0, self.y + self.row_height, 0
        panel.gridPos = g.GridPos(h=h, w=w, x=self.x, y=self.y)
        self.panels.append(panel)
        self.x += w
        self.row_height = max(self.row_height, h)

    def row(self, title: str, repeat: str = "") -> None:
        """Start a new full-width row titled ``title``, repeated once per value of variable ``repeat``."""
        if self.x:
            self.x, self.y, self.row_height = 0, self.y + self.row_height, 0
        row = g.RowPanel(title=title, gridPos=g.GridPos(h=1, w=WIDTH, x=0, y=self.y))
        if repeat:
            row.repeat = g.Repeat(variable=repeat)
        self.panels.append(row)
        self.y += 1


def targets(queries: list[Query], fmt: str = "time_series") -> list[g.Target]:
    refs = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return [
        g.Target(
            expr=promql.without_nan(q.expr),
            legendFormat=q.legend,
            refId=refs[i],
            instant=q.instant,
            datasource=DS,
            format=fmt,
        )
        for i, q in enumerate(queries)
    ]


def timeseries(title: str, queries: list[Query], unit: str = "", stacked: bool = False, **kw: Any) -> Any:
    return g.TimeSeries(
        title=title,
        dataSource=DS,
        targets=targets(queries),
        unit=unit,
        stacking={"mode": "normal", "group": "A"} if stacked else {},
        fillOpacity=40 if stacked else 0,
        **kw,
    )


def stat(title: str, queries: list[Query], unit: str = "", **kw: Any) -> Any:
    return g.Stat(title=title, dataSource=DS, targets=targets(queries), format=unit or "none", **kw)


def table(
    title: str,
    queries: list[Query],
    transformations: list[dict[str, Any]],
    overrides: list[dict[str, Any]],
    description: str = "",
) -> Any:
    """A table of instant queries (format ``table``), one column per query after ``transformations``;
    ``overrides`` set each column's unit, colours, value mappings and data links."""
    instant = [Query(q.expr, q.legend, instant=True) for q in queries]
    panel = g.Table(title=title, dataSource=DS, targets=targets(instant, "table"), description=description)
    panel.transformations = transformations
    panel.thresholds = [{"color": "green", "value": None}]
    panel.extraJson = {
        "fieldConfig": {
            "defaults": {"custom": {"align": "auto", "cellOptions": {"type": "auto"}}},
            "overrides": overrides,
        },
        "options": {"showHeader": True, "cellHeight": "sm", "footer": {"show": False}},
    }
    return panel


def dashboard_links(tag: str) -> list[dict[str, Any]]:
    """The dashboard-level link to every dashboard tagged ``tag``, carrying the time range and the
    variables (endpoint, model, class) across."""
    return [
        {
            "type": "dashboards",
            "tags": [tag],
            "asDropdown": False,
            "includeVars": True,
            "keepTime": True,
            "targetBlank": False,
            "title": "M3 dashboards",
            "tooltip": "",
            "icon": "external link",
            "url": "",
        }
    ]


def heatmap(title: str, queries: list[Query]) -> Any:
    """Buckets over time; Grafana de-cumulates them (format ``heatmap``), so one query must hold
    exactly one bucket layout: place it in a row repeated per endpoint (``Layout.row(repeat=...)``)."""
    panel = g.Heatmap(
        title=title, dataSource=DS, targets=targets(queries, fmt="heatmap"), dataFormat="tsbuckets"
    )
    panel.options = {"calculate": False, "yAxis": {"axisPlacement": "left"}, "cellGap": 1}
    return panel


#: The variable ``endpoint`` narrowed to the endpoints serving the selected classes (the monitor
#: probes every class on every endpoint of its pool): a link that sets ``var-class`` opens the
#: dashboard on that class's pool. Its "All" is the listed endpoints, not ``.*``.
ENDPOINT_OF_CLASS = "endpoint_of_class"


def template_vars(*names: str) -> list[Any]:
    """The datasource variable plus the requested label variables (endpoint, model, class, or
    :data:`ENDPOINT_OF_CLASS`, named ``endpoint``)."""
    queries = {
        "endpoint": f"label_values(up, {cv.L_ENDPOINT})",
        "model": f"label_values({cv.VLLM_RUNNING}, {cv.L_MODEL})",
        "class": f"label_values({cv.PROBE_TOTAL}, {cv.L_CLASS})",
        ENDPOINT_OF_CLASS: f'label_values({cv.PROBE_TOTAL}{{{cv.L_CLASS}=~"$class"}}, {cv.L_ENDPOINT})',
        cv.L_DECLARED_SLO: f"label_values({cv.SLO_META_OBJECTIVE_RECORD}"
        f'{{{cv.L_CLASS}=~"$class",{cv.L_DECLARED_SLO}!=""}}, {cv.L_DECLARED_SLO})',
    }
    labels = {ENDPOINT_OF_CLASS: "Endpoint", cv.L_DECLARED_SLO: "SLO (per tenant or band)"}
    out = [
        g.Template(
            name="datasource",
            type="datasource",
            query="prometheus",
            label="Data source",
            default=DATASOURCE_UID,
            hide=0,
            includeAll=False,
            multi=False,
        )
    ]
    for name in names:
        out.append(
            g.Template(
                name=cv.L_ENDPOINT if name == ENDPOINT_OF_CLASS else name,
                label=labels.get(name, name.capitalize()),
                query=queries[name],
                dataSource=DS,
                includeAll=True,
                multi=True,
                allValue=None if name == ENDPOINT_OF_CLASS else ".*",
                refresh=2,
                type="query",
                sort=1,
            )
        )
    return out


def deployment_annotation(job_monitor: str) -> dict[str, Any]:
    """Annotation marking every change of ``m3mon_deployment_info`` (new image, flags, checkpoint)."""
    return {
        "name": "Deployment changes",
        "datasource": DS,
        "enable": True,
        "iconColor": "orange",
        "expr": f'changes({cv.DEPLOYMENT_INFO}{{job="{job_monitor}"}}[5m]) > 0',
        "step": "60s",
        "titleFormat": "Deployment changed on {{endpoint}}",
        "tagKeys": "endpoint",
    }


def maintenance_annotation() -> dict[str, Any]:
    """Annotation over every stretch in which a maintenance window held (docs/maintenance.md)."""
    return {
        "name": "Maintenance",
        "datasource": DS,
        "enable": True,
        "iconColor": "blue",
        "expr": f'ALERTS{{alertname="{cv.ALERT_MAINTENANCE}",alertstate="firing"}}',
        "step": "60s",
        "titleFormat": "Maintenance {{maintenance}}: {{class}} on {{endpoint}}",
        "tagKeys": "maintenance,class,endpoint",
    }


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _base_steps(value: Any) -> Any:
    """Threshold steps with their ``value`` key back: the base step's is null (``_clean`` dropped it)."""
    if isinstance(value, dict):
        if value.get("mode") == "absolute" and isinstance(value.get("steps"), list):
            for step in value["steps"]:
                step.setdefault("value", None)
        for v in value.values():
            _base_steps(v)
    elif isinstance(value, list):
        for v in value:
            _base_steps(v)
    return value


def _clean_panel(panel: dict[str, Any]) -> dict[str, Any]:
    if panel.get("type") == "row":
        return {k: v for k, v in panel.items() if k in _ROW_KEYS}
    out = {k: v for k, v in panel.items() if k not in _LEGACY_PANEL}
    if out.get("type") == "table":
        out = {k: v for k, v in out.items() if k not in _LEGACY_TABLE}
        out["fieldConfig"]["defaults"]["custom"].pop("displayMode", None)  # Grafana 10: cellOptions
    if out.get("type") == "heatmap":
        out.setdefault("fieldConfig", {}).setdefault("overrides", [])
    if out.get("type") == "stat":
        steps = out.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {})
        if steps.get("steps") == "":
            steps["steps"] = []
    if "panels" in out:
        out["panels"] = [_clean_panel(p) for p in out["panels"]]
    return out


def to_json(dashboard: Any, annotations: list[dict[str, Any]], description: str) -> dict[str, Any]:
    """The dashboard as Grafana's current JSON model (legacy keys removed)."""
    raw = json.loads(json.dumps(dashboard.auto_panel_ids().to_json_data(), cls=DashboardEncoder))
    data: dict[str, Any] = _clean(raw)
    for key in _LEGACY_DASHBOARD:
        data.pop(key, None)
    data["panels"] = [_base_steps(_clean_panel(p)) for p in data["panels"]]
    data["templating"]["list"] = [
        {k: v for k, v in t.items() if k not in _LEGACY_TEMPLATE} for t in data["templating"]["list"]
    ]
    for t in data["templating"]["list"]:
        if t["type"] == "datasource":
            t["current"] = {"selected": True, "text": "Prometheus", "value": DATASOURCE_UID}
        else:
            t["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
    data.get("timepicker", {}).pop("time_options", None)
    data["annotations"] = {"list": annotations}
    data["description"] = description
    return data
