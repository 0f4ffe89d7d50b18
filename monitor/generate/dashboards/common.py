"""Selectors and query shapes every dashboard uses, and the dashboard wrapper itself."""

from __future__ import annotations

from typing import Any

from grafanalib import core as g

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.dashboards.panels import (
    Layout,
    Query,
    dashboard_links,
    deployment_annotation,
    maintenance_annotation,
    template_vars,
    to_json,
)
from monitor.model import Model

RATE = "$__rate_interval"
#: Every generated dashboard carries this tag; each links to all of them through it.
TAG = "m3mon"


#: Where the probes' network stage comes from, on every panel that draws it.
NETWORK_NOTE = (
    "network (probes) is the probe's TTFT less the server's own TTFT for the same request, which "
    "vLLM reports only when it runs with --enable-per-request-metrics; without that flag the "
    "series is absent (no data), not zero."
)


def vllm_sel(model: Model, extra: str = "") -> str:
    """Selector for vLLM series filtered by the endpoint and model variables."""
    return f'{{job="{model.alerting.job_vllm}",endpoint=~"$endpoint",model_name=~"$model"{extra}}}'


def probe_sel(model: Model, extra: str = "") -> str:
    """Selector for the monitor's probe series filtered by the endpoint and class variables."""
    return f'{{job="{model.alerting.job_monitor}",endpoint=~"$endpoint",class=~"$class"{extra}}}'


#: The probe kind that alone observes a probe series: tool turnaround is measured by agent sessions
#: only, cold / warm long-prompt TTFT by the long-prompt probe only. The exporter creates their
#: series for every class, so a panel reading one is restricted to the classes that run the kind
#: (and not drawn when none does): a class without it would show an empty or NaN line.
TOOL_ROUNDS_KIND = "agent_session"
LONG_PROMPT_KIND = "long_prompt"
KIND_OF_SERIES: dict[str, str] = {
    cv.PROBE_TOOL_TURNAROUND: TOOL_ROUNDS_KIND,
    cv.PROBE_LONG_PROMPT_TTFT: LONG_PROMPT_KIND,
}


def kind_sel(model: Model, kind: str, extra: str = "") -> str | None:
    """:func:`probe_sel` restricted to the classes whose probes include ``kind``; None if none does."""
    classes = [rc.name for rc in model.classes if kind in rc.probe.kinds]
    if not classes:
        return None
    return probe_sel(model, f",{cv.L_CLASS}{q.regex(classes)}{extra}")


# Histograms are only ever added up within one bucket layout. vLLM's token histograms follow each
# server's max-model-len (top bucket 20,000 on a 32K pool, 500,000 on a 512K pool) and its latency
# histograms change with --custom-histogram-buckets and between versions, so one endpoint is the
# largest unit known to share a layout: every ``_bucket`` aggregation keeps ``le`` AND ``endpoint``,
# and a fleet view is the set of per-endpoint results, never a quantile of summed buckets. The
# monitor's own probe histograms (m3mon_probe_*_seconds) share one layout across the whole monitor
# (built from the config, Model.latency_buckets()), so summing them across the endpoints of one
# monitor would be safe; they are still shown per endpoint wherever a quantile is shown.
LAYOUT = cv.L_ENDPOINT
"""The label that identifies one histogram bucket layout."""


def _by(*labels: str) -> str:
    return ", ".join(labels)


def quantiles(
    metric: str, sel: str, qs: tuple[float, ...] = (0.99, 0.95, 0.9, 0.5), by: str = ""
) -> list[Query]:
    """P99..P50 of a histogram plus its mean, one series per endpoint (and per ``by`` label)."""
    keys = (LAYOUT, by) if by else (LAYOUT,)
    prefix = " ".join(f"{{{{{k}}}}}" for k in keys) + " "
    out = [
        Query(
            f"histogram_quantile({q:g}, sum by ({_by('le', *keys)}) (rate({metric}_bucket{sel}[{RATE}])))",
            f"{prefix}P{round(q * 100)}",
        )
        for q in qs
    ]
    out.append(
        Query(
            f"sum by ({_by(*keys)}) (rate({metric}_sum{sel}[{RATE}]))\n"
            f"/ sum by ({_by(*keys)}) (rate({metric}_count{sel}[{RATE}]))",
            f"{prefix}Mean",
        )
    )
    return out


def range_stat(metric: str, sel: str, q: float | None) -> Query:
    """Per endpoint, a whole-range statistic: quantile ``q`` or (``None``) the mean over ``$__range``."""
    legend = f"{{{{{LAYOUT}}}}}"
    if q is None:
        return Query(
            f"sum by ({LAYOUT}) (increase({metric}_sum{sel}[$__range]))\n"
            f"/ sum by ({LAYOUT}) (increase({metric}_count{sel}[$__range]))",
            legend,
            instant=True,
        )
    return Query(
        f"histogram_quantile({q:g}, sum by (le, {LAYOUT}) (rate({metric}_bucket{sel}[$__range])))",
        legend,
        instant=True,
    )


def dashboard(
    model: Model, uid: str, title: str, layout: Layout, banner: str, variables: tuple[str, ...]
) -> dict[str, Any]:
    """Wrap a laid-out set of panels into the final dashboard JSON."""
    d = g.Dashboard(
        title=title,
        uid=uid,
        tags=[TAG, "minimax-m3"],
        timezone="browser",
        refresh="30s",
        time=g.Time("now-6h", "now"),
        panels=layout.panels,
        templating=g.Templating(list=template_vars(*variables)),
        schemaVersion=39,
    )
    annotations = [deployment_annotation(model.alerting.job_monitor), maintenance_annotation()]
    out = to_json(d, annotations, banner)
    out["links"] = dashboard_links(TAG)
    return out


SLO_SEL = '{class=~"$class"}'
