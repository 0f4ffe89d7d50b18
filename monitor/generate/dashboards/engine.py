"""vLLM engine dashboard: a counterpart of every panel of vLLM's example dashboards.

Panels follow ``examples/observability/prometheus_grafana/grafana.json`` and the 0.33
``performance_statistics.json`` / ``query_statistics.json`` with current metric names, filtered by
the endpoint and model variables. The first row holds the panels of vLLM's own example dashboard
in its order, each reading an earlier vLLM generation's name where the newest is absent.
:mod:`monitor.generate.dashboards.parity` lists which panel here stands for which upstream panel.
The class variable narrows the endpoints to a class's pool (the SLO overview links here with it).
Unlike upstream, histogram quantiles are per endpoint (token buckets follow each pool's
max-model-len), and the request-size row repeats once per endpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from monitor import conventions as cv
from monitor.generate.dashboards.common import LAYOUT, RATE, dashboard, quantiles, range_stat, vllm_sel
from monitor.generate.dashboards.gpu import add_gpu_row
from monitor.generate.dashboards.panels import ENDPOINT_OF_CLASS, Layout, Query, heatmap, stat, timeseries
from monitor.model import Model
from monitor.scrape.names import SOURCES

UID = "m3mon-vllm-engine"

_STAT_OF = (("E2E", cv.VLLM_E2E), ("TTFT", cv.VLLM_TTFT), ("ITL", cv.VLLM_ITL))
_STATS = (("P50", 0.5), ("P90", 0.9), ("P99", 0.99), ("Avg", None))

#: The first row: the panels of vLLM's own example dashboard
#: (``examples/observability/prometheus_grafana/grafana.json``), in its order.
FIRST_ROW = "vLLM (the panels of vLLM's example dashboard)"


def older_names(metric: str) -> tuple[str, ...]:
    """Earlier vLLM generations' names of ``metric`` (the scrape name table's higher ranks), newest
    first: ``vllm:gpu_cache_usage_perc`` for ``vllm:kv_cache_usage_perc``."""
    newest = next(x for x in SOURCES if x.metric == metric and x.rank == 0)
    older = [x for x in SOURCES if x.field == newest.field and x.kind == newest.kind and x.rank > 0]
    return tuple(x.metric for x in sorted(older, key=lambda x: x.rank) if x.metric.startswith("vllm:"))


def _any_generation(metric: str, build: Callable[[str], list[Query]]) -> list[Query]:
    """``build``'s queries for ``metric``, each falling back (``or``, per endpoint) to the same query
    on an earlier generation's name where the newest is absent."""
    out = build(metric)
    for name in older_names(metric):
        out = [Query(f"{a.expr}\nor\n{b.expr}", a.legend) for a, b in zip(out, build(name), strict=True)]
    return out


def _first_row(lay: Layout, s: str) -> None:
    """E2E, token throughput, ITL, scheduler state, TTFT, KV cache, finish reason, TPOT."""
    lay.row(FIRST_ROW)
    lay.add(timeseries("E2E request latency", quantiles(cv.VLLM_E2E, s), unit="s"))
    lay.add(
        timeseries(
            "Token throughput",
            [
                Query(f"sum(rate({cv.VLLM_PROMPT_TOKENS}{s}[{RATE}]))", "Prompt tokens/s"),
                Query(f"sum(rate({cv.VLLM_GENERATION_TOKENS}{s}[{RATE}]))", "Generation tokens/s"),
                Query(f"sum(rate({cv.VLLM_ITERATION_TOKENS}_count{s}[{RATE}]))", "Engine iterations/s"),
            ],
        )
    )
    itl = _any_generation(cv.VLLM_ITL, lambda m: quantiles(m, s))
    lay.add(timeseries("Inter-token latency", itl, unit="s"))
    lay.add(
        timeseries(
            "Scheduler state",
            [
                Query(f"sum by (endpoint) ({cv.VLLM_RUNNING}{s})", "{{endpoint}} running"),
                Query(f"sum by (endpoint) ({cv.VLLM_WAITING}{s})", "{{endpoint}} waiting"),
            ],
        )
    )
    lay.add(timeseries("Time to first token", quantiles(cv.VLLM_TTFT, s), unit="s"))
    kv = _any_generation(cv.VLLM_KV_USAGE, lambda m: [Query(f"max by (endpoint) ({m}{s})", "{{endpoint}}")])
    lay.add(timeseries("KV cache utilization", kv, unit="percentunit"))
    finished = f"sum by (finished_reason) (increase({cv.VLLM_REQUEST_SUCCESS}{s}[{RATE}]))"
    lay.add(timeseries("Finish reason", [Query(finished, "{{finished_reason}}")]))
    lay.add(timeseries("Time per output token (TPOT)", quantiles(cv.VLLM_TPOT, s), unit="s"))


def _latency(lay: Layout, s: str) -> None:
    lay.row("Latency over the selected range")
    for name, metric in _STAT_OF:
        for label, q in _STATS:
            lay.add(stat(f"{name} ({label})", [range_stat(metric, s, q)], unit="s"), w=6, h=4)


def _load(lay: Layout, s: str) -> None:
    lay.row("Requests")
    lay.add(
        timeseries(
            "Successful requests",
            [Query(f"sum by (model_name) (rate({cv.VLLM_REQUEST_SUCCESS}{s}[{RATE}]))", "{{model_name}}")],
            unit="reqps",
        )
    )
    lay.add(
        stat("Request rate (avg)", [Query(f"sum(rate({cv.VLLM_REQUEST_SUCCESS}{s}[{RATE}]))")], unit="reqps"),
        w=6,
        h=8,
    )
    lay.add(
        stat(
            "E2E latency by model (P50/P90/P99)",
            [
                Query(
                    f"histogram_quantile({q}, sum by (le, {LAYOUT}, model_name) "
                    f"(rate({cv.VLLM_E2E}_bucket{s}[{RATE}])))",
                    f"{{{{{LAYOUT}}}}} {{{{model_name}}}} P{p}",
                )
                for q, p in (("0.5", 50), ("0.9", 90), ("0.99", 99))
            ],
            unit="s",
        ),
        w=6,
        h=8,
    )


def _phases(lay: Layout, s: str) -> None:
    lay.row("Request phases")
    lay.add(
        timeseries(
            "Queue time", [Query(f"sum(rate({cv.VLLM_QUEUE}_sum{s}[{RATE}]))", "Queue seconds/s")], unit="s"
        )
    )
    lay.add(
        timeseries(
            "Prefill and decode time",
            [
                Query(f"sum(rate({cv.VLLM_PREFILL}_sum{s}[{RATE}]))", "Prefill"),
                Query(f"sum(rate({cv.VLLM_DECODE}_sum{s}[{RATE}]))", "Decode"),
            ],
            unit="s",
        )
    )
    lay.add(
        timeseries(
            "Max generation tokens requested",
            [Query(f"sum(rate({cv.VLLM_MAX_GEN_TOKENS_HIST}_sum{s}[{RATE}]))", "Tokens")],
        )
    )


def _volume(lay: Layout, s: str) -> None:
    lay.row("Token volume")
    for title, metric in (("Input", cv.VLLM_PROMPT_TOKENS), ("Output", cv.VLLM_GENERATION_TOKENS)):
        lay.add(
            timeseries(
                f"{title} tokens by model",
                [Query(f"sum by (model_name) (rate({metric}{s}[{RATE}]))", "{{model_name}}")],
            ),
            w=9,
        )
        lay.add(stat(f"{title} tokens/s (avg)", [Query(f"sum(rate({metric}{s}[{RATE}]))")]), w=3)


def _sizes(lay: Layout, s: str) -> None:
    """Token histograms follow each pool's max-model-len, so this row repeats once per endpoint."""
    ep = f"{{{{{LAYOUT}}}}}"
    lay.row(f"Request sizes: ${LAYOUT}", repeat=LAYOUT)
    for title, metric in (
        ("Prompt length", cv.VLLM_PROMPT_TOKENS_HIST),
        ("Generation length", cv.VLLM_GENERATION_TOKENS_HIST),
    ):
        expr = f"sum by (le, {LAYOUT}) (increase({metric}_bucket{s}[{RATE}]))"
        lay.add(heatmap(f"Request {title.lower()}", [Query(expr, "{{le}}")]))
    for label, q in (("P50", 0.5), ("P90", 0.9), ("P99", 0.99)):
        expr = (
            f"histogram_quantile({q:g}, sum by (le, {LAYOUT}) "
            f"(rate({cv.VLLM_PROMPT_TOKENS_HIST}_bucket{s}[{RATE}])))"
        )
        lay.add(stat(f"Input tokens per request ({label})", [Query(expr, ep)]), w=6, h=4)
    avg = (
        f"sum by ({LAYOUT}) (rate({cv.VLLM_PROMPT_TOKENS}{s}[{RATE}]))\n"
        f"/ sum by ({LAYOUT}) (rate({cv.VLLM_REQUEST_SUCCESS}{s}[{RATE}]))"
    )
    lay.add(stat("Input tokens per request (Avg)", [Query(avg, ep)]), w=6, h=4)


def build(model: Model, banner: str) -> dict[str, Any]:
    s = vllm_sel(model)
    lay = Layout()
    _first_row(lay, s)
    _latency(lay, s)
    _load(lay, s)
    add_gpu_row(lay, model, s)
    _phases(lay, s)
    _volume(lay, s)
    _sizes(lay, s)  # last: a repeated row holds every panel up to the next row
    variables = ("class", ENDPOINT_OF_CLASS, "model")
    return dashboard(model, UID, "M3 / vLLM engine", lay, banner, variables)
