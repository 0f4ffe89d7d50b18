"""Probes dashboard: outcomes by kind and reason, latency histograms, cold vs warm long prompts."""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate.dashboards.common import (
    LAYOUT,
    LONG_PROMPT_KIND,
    NETWORK_NOTE,
    RATE,
    TOOL_ROUNDS_KIND,
    dashboard,
    kind_sel,
    probe_sel,
    quantiles,
)
from monitor.generate.dashboards.panels import Layout, Query, heatmap, timeseries
from monitor.model import Model

UID = "m3mon-probes"


def _distributions(lay: Layout, p: str) -> None:
    """Heatmaps per endpoint (a repeated row, placed last): what each pool's probes saw."""
    lay.row(f"Probe latency distribution: ${LAYOUT}", repeat=LAYOUT)
    for title, metric in (("TTFT", cv.PROBE_TTFT), ("Inter-token latency", cv.PROBE_ITL)):
        expr = f"sum by (le, {LAYOUT}) (increase({metric}_bucket{p}[{RATE}]))"
        lay.add(heatmap(f"Probe {title} distribution", [Query(expr, "{{le}}")]))


def build(model: Model, banner: str) -> dict[str, Any]:
    p = probe_sel(model)
    fail = probe_sel(model, ',result="failure"')
    ok = probe_sel(model, ',result="success"')
    counted = probe_sel(model, f',{cv.L_REASON}!="{cv.REASON_MONITOR_ERROR}"')  # monitor faults: no event
    lay = Layout()
    lay.row("Outcomes")
    lay.add(
        timeseries(
            "Probe success ratio by kind",
            [
                Query(
                    f"sum by (kind) (rate({cv.PROBE_TOTAL}{ok}[{RATE}]))\n"
                    f"/ sum by (kind) (rate({cv.PROBE_TOTAL}{counted}[{RATE}]))",
                    "{{kind}}",
                ),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Probe failures by kind and reason",
            [
                Query(
                    f"sum by (kind, reason) (increase({cv.PROBE_TOTAL}{fail}[{RATE}]))", "{{kind}} {{reason}}"
                ),
            ],
        )
    )
    lay.row("Latency seen by probes")
    lay.add(timeseries("Probe TTFT by kind", quantiles(cv.PROBE_TTFT, p, (0.99, 0.5), by="kind"), unit="s"))
    lay.add(timeseries("Probe E2E by kind", quantiles(cv.PROBE_E2E, p, (0.99, 0.5), by="kind"), unit="s"))
    tool = kind_sel(model, TOOL_ROUNDS_KIND)
    lay.add(
        timeseries(
            "Network time and tool turnaround" if tool else "Network time",
            [
                *(Query(x.expr, f"network {x.legend}") for x in quantiles(cv.PROBE_NETWORK, p, (0.95,))[:1]),
                *(
                    Query(x.expr, f"tool {x.legend}")
                    for x in (quantiles(cv.PROBE_TOOL_TURNAROUND, tool, (0.95,))[:1] if tool else [])
                ),
            ],
            unit="s",
            description=NETWORK_NOTE
            + (" Tool turnaround is drawn for the classes probed with agent sessions only." if tool else ""),
        )
    )
    long_prompt = kind_sel(model, LONG_PROMPT_KIND)
    if long_prompt:  # drawn for the classes running the long-prompt probe only
        lay.add(
            timeseries(
                "Long prompt TTFT: cold vs warm prefix cache",
                quantiles(cv.PROBE_LONG_PROMPT_TTFT, long_prompt, (0.95, 0.5), by=cv.L_CACHE)[:-1],
                unit="s",
            )
        )
    _distributions(lay, p)
    return dashboard(model, UID, "M3 / Probes", lay, banner, ("endpoint", "class"))
