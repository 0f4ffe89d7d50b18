"""vLLM engine dashboard: a counterpart of every panel of vLLM's example dashboards.

Panels follow ``examples/online_serving/prometheus_grafana/grafana.json`` and the 0.33
``performance_statistics.json`` / ``query_statistics.json`` with current metric names, filtered by
the endpoint and model variables. :mod:`monitor.generate.dashboards.parity` lists which panel
here stands for which upstream panel. Unlike upstream, histogram quantiles are per endpoint (token
buckets follow each pool's max-model-len), and the request-size row repeats once per endpoint.
"""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate.dashboards.common import LAYOUT, RATE, dashboard, quantiles, range_stat, vllm_sel
from monitor.generate.dashboards.gpu import add_gpu_row
from monitor.generate.dashboards.panels import Layout, Query, heatmap, stat, timeseries
from monitor.model import Model

UID = "m3mon-vllm-engine"

_LATENCIES = (
    ("E2E request latency", cv.VLLM_E2E),
    ("Time to first token", cv.VLLM_TTFT),
    ("Inter-token latency", cv.VLLM_ITL),
    ("Time per output token (TPOT)", cv.VLLM_TPOT),
)
_STAT_OF = (("E2E", cv.VLLM_E2E), ("TTFT", cv.VLLM_TTFT), ("ITL", cv.VLLM_ITL))
_STATS = (("P50", 0.5), ("P90", 0.9), ("P99", 0.99), ("Avg", None))


def _latency(lay: Layout, s: str) -> None:
    lay.row("Latency")
    for title, metric in _LATENCIES:
        lay.add(timeseries(title, quantiles(metric, s), unit="s"))
    lay.row("Latency over the selected range")
    for name, metric in _STAT_OF:
        for label, q in _STATS:
            lay.add(stat(f"{name} ({label})", [range_stat(metric, s, q)], unit="s"), w=6, h=4)


def _load(lay: Layout, s: str) -> None:
    lay.row("Load and throughput")
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
    lay.add(
        timeseries(
            "Scheduler state",
            [
                Query(f"sum by (endpoint) ({cv.VLLM_RUNNING}{s})", "{{endpoint}} running"),
                Query(f"sum by (endpoint) ({cv.VLLM_WAITING}{s})", "{{endpoint}} waiting"),
            ],
        )
    )
    lay.add(
        timeseries(
            "KV cache utilization",
            [Query(f"max by (endpoint) ({cv.VLLM_KV_USAGE}{s})", "{{endpoint}}")],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Finish reason",
            [
                Query(
                    f"sum by (finished_reason) (increase({cv.VLLM_REQUEST_SUCCESS}{s}[{RATE}]))",
                    "{{finished_reason}}",
                )
            ],
        )
    )
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
    _latency(lay, s)
    _load(lay, s)
    add_gpu_row(lay, model, s)
    _phases(lay, s)
    _volume(lay, s)
    _sizes(lay, s)  # last: a repeated row holds every panel up to the next row
    return dashboard(model, UID, "M3 / vLLM engine", lay, banner, ("endpoint", "model"))
