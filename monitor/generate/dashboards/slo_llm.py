"""The SLO dashboard's LLM row: goodput per class, stream stalls, cold vs warm first token.

Probe histograms share one bucket layout per configuration, but the panels still keep
``endpoint`` in every ``_bucket`` aggregation, as every dashboard does (common.py). Ratios are
written ``/ (... > 0)`` so an hour without probes is no data, never NaN.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate.dashboards.common import LONG_PROMPT_KIND, RATE, kind_sel, probe_sel
from monitor.generate.dashboards.panels import Layout, Query, timeseries
from monitor.model import Model


def _quantile(q: float, metric: str, selector: str, legend: str) -> Query:
    expr = f"histogram_quantile({q}, sum by (class, endpoint, le) (rate({metric}_bucket{selector}[{RATE}])))"
    return Query(expr, legend)


def add_llm_row(model: Model, lay: Layout) -> None:
    """Goodput, longest gap per stream and the long-prompt probe's cold / warm TTFT."""
    counted = probe_sel(model, f',{cv.L_REASON}!="{cv.REASON_MONITOR_ERROR}"')
    good = probe_sel(model, f',{cv.L_REASON}!="{cv.REASON_MONITOR_ERROR}",{cv.L_GOOD}="true"')
    total = f"sum by (class) (increase({cv.PROBE_GOODPUT_TOTAL}{counted}[1h]))"
    lay.row("LLM SLIs: goodput, stalls, cold vs warm first token")
    lay.add(
        timeseries(
            "Goodput: probes meeting every latency SLO of their class (1h)",
            [
                Query(
                    f"sum by (class) (increase({cv.PROBE_GOODPUT_TOTAL}{good}[1h]))\n/\n({total} > 0)",
                    "{{class}}",
                )
            ],
            unit="percentunit",
        )
    )
    sel = probe_sel(model)
    lay.add(
        timeseries(
            "Longest gap per stream (P50 / P95)",
            [
                _quantile(0.5, cv.PROBE_LONGEST_GAP, sel, "{{class}} {{endpoint}} P50"),
                _quantile(0.95, cv.PROBE_LONGEST_GAP, sel, "{{class}} {{endpoint}} P95"),
            ],
            unit="s",
        )
    )
    cold = kind_sel(model, LONG_PROMPT_KIND, f',{cv.L_CACHE}="cold"')
    warm = kind_sel(model, LONG_PROMPT_KIND, f',{cv.L_CACHE}="warm"')
    if cold is None or warm is None:  # no class runs the long-prompt probe: no panel
        return
    lay.add(
        timeseries(
            "Long-prompt TTFT: cold vs warm prefix (P50)",
            [
                _quantile(0.5, cv.PROBE_LONG_PROMPT_TTFT, cold, "{{class}} {{endpoint}} cold"),
                _quantile(0.5, cv.PROBE_LONG_PROMPT_TTFT, warm, "{{class}} {{endpoint}} warm"),
            ],
            unit="s",
            description="Drawn for the classes that run the long-prompt probe only.",
        )
    )
