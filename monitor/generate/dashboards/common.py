"""Selectors and query shapes every dashboard uses, and the dashboard wrapper itself."""

from __future__ import annotations

from typing import Any

from grafanalib import core as g

from monitor.generate.dashboards.panels import Layout, Query, deployment_annotation, template_vars, to_json
from monitor.model import Model

RATE = "$__rate_interval"


def vllm_sel(model: Model, extra: str = "") -> str:
    """Selector for vLLM series filtered by the endpoint and model variables."""
    return f'{{job="{model.alerting.job_vllm}",endpoint=~"$endpoint",model_name=~"$model"{extra}}}'


def probe_sel(model: Model, extra: str = "") -> str:
    """Selector for the monitor's probe series filtered by the endpoint and class variables."""
    return f'{{job="{model.alerting.job_monitor}",endpoint=~"$endpoint",class=~"$class"{extra}}}'


def quantiles(
    metric: str, sel: str, qs: tuple[float, ...] = (0.99, 0.95, 0.9, 0.5), by: str = ""
) -> list[Query]:
    """P99..P50 of a histogram plus its mean, as vLLM's example dashboard plots them."""
    group = f"le{', ' + by if by else ''}"
    prefix = f"{{{{{by}}}}} " if by else ""
    out = [
        Query(
            f"histogram_quantile({q:g}, sum by ({group}) (rate({metric}_bucket{sel}[{RATE}])))",
            f"{prefix}P{round(q * 100)}",
        )
        for q in qs
    ]
    out.append(
        Query(
            f"sum{' by (' + by + ')' if by else ''} (rate({metric}_sum{sel}[{RATE}]))\n"
            f"/ sum{' by (' + by + ')' if by else ''} (rate({metric}_count{sel}[{RATE}]))",
            f"{prefix}Mean",
        )
    )
    return out


def range_stat(metric: str, sel: str, q: float | None) -> Query:
    """A whole-range statistic: quantile ``q`` or (``None``) the mean over ``$__range``."""
    if q is None:
        return Query(
            f"sum(increase({metric}_sum{sel}[$__range])) / sum(increase({metric}_count{sel}[$__range]))",
            instant=True,
        )
    return Query(
        f"histogram_quantile({q:g}, sum by (le) (rate({metric}_bucket{sel}[$__range])))", instant=True
    )


def dashboard(
    model: Model, uid: str, title: str, layout: Layout, banner: str, variables: tuple[str, ...]
) -> dict[str, Any]:
    """Wrap a laid-out set of panels into the final dashboard JSON."""
    d = g.Dashboard(
        title=title,
        uid=uid,
        tags=["m3mon", "minimax-m3"],
        timezone="browser",
        refresh="30s",
        time=g.Time("now-6h", "now"),
        panels=layout.panels,
        templating=g.Templating(list=template_vars(*variables)),
        schemaVersion=39,
    )
    annotations = [deployment_annotation(model.alerting.job_monitor)]
    return to_json(d, annotations, banner)


SLO_SEL = '{class=~"$class"}'
