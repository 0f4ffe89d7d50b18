"""Latency breakdown per request class, KV/prefix cache and speculative-decoding dashboards."""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.dashboards.common import (
    NETWORK_NOTE,
    RATE,
    TOOL_ROUNDS_KIND,
    dashboard,
    quantiles,
    vllm_sel,
)
from monitor.generate.dashboards.panels import Layout, Query, timeseries
from monitor.model import Model

LATENCY_UID = "m3mon-latency"
CACHE_UID = "m3mon-cache"
SPEC_UID = "m3mon-spec-decode"


#: The probe kind whose runs measure tool turnaround (tool result sent -> next first token).


def _mean(metric: str, sel: str, legend: str) -> Query:
    return Query(f"sum(rate({metric}_sum{sel}[{RATE}])) / sum(rate({metric}_count{sel}[{RATE}]))", legend)


def _class_rows(model: Model, lay: Layout) -> None:
    a = model.alerting
    for rc in model.classes:
        pool = [e.name for e in model.endpoints_for(rc.name)]
        srv = q.matchers([(cv.L_JOB, q.eq(a.job_vllm)), (cv.L_ENDPOINT, q.regex(pool))])
        prb = q.matchers([(cv.L_JOB, q.eq(a.job_monitor)), (cv.L_CLASS, q.eq(rc.name))])
        lay.row(f"{rc.name} (pool: {', '.join(pool)})")
        stages = [
            _mean(cv.VLLM_QUEUE, srv, "queue (server)"),
            _mean(cv.VLLM_PREFILL, srv, "prefill (server)"),
            _mean(cv.VLLM_DECODE, srv, "decode (server)"),
            _mean(cv.PROBE_NETWORK, prb, "network (probes)"),
        ]
        if TOOL_ROUNDS_KIND in rc.probe.kinds:  # only agent sessions measure it
            stages.append(_mean(cv.PROBE_TOOL_TURNAROUND, prb, "tool turnaround (probes)"))
        lay.add(
            timeseries(
                f"{rc.name}: where a request's time goes (mean)",
                stages,
                unit="s",
                stacked=True,
                description=NETWORK_NOTE,
            ),
            w=8,
        )
        qs = (0.99, 0.95, 0.5)
        lay.add(
            timeseries(
                f"{rc.name}: TTFT server vs probes",
                [
                    *(Query(x.expr, f"server {x.legend}") for x in quantiles(cv.VLLM_TTFT, srv, qs)[:3]),
                    *(Query(x.expr, f"probes {x.legend}") for x in quantiles(cv.PROBE_TTFT, prb, qs)[:3]),
                ],
                unit="s",
            ),
            w=8,
        )
        lay.add(
            timeseries(
                f"{rc.name}: E2E server vs probes",
                [
                    *(Query(x.expr, f"server {x.legend}") for x in quantiles(cv.VLLM_E2E, srv, qs)[:3]),
                    *(Query(x.expr, f"probes {x.legend}") for x in quantiles(cv.PROBE_E2E, prb, qs)[:3]),
                ],
                unit="s",
            ),
            w=8,
        )
        _tail_panels(lay, rc.name, a.job_monitor)


#: What the tail panels say about their series (docs/bottleneck.md).
TAIL_NOTE = (
    "The service's bottleneck verdict (docs/bottleneck.md), every 15 s from its store: the stage "
    "shares of the probe requests at or above P95 of TTFT over 15 minutes, and the verdict that holds "
    "(1) from the probes, the server's histograms and gauges over 5 minutes and the GPUs over 2."
)


CAUSE_NOTE = (
    "Every cause the verdict names, with what it costs a request of the tail in seconds and the "
    "evidence that named it (probes, real-traffic spans, server histograms, server gauges); 0 for "
    "a cause whose cost is refusals or a growing queue (docs/bottleneck.md)."
)


def _tail_panels(lay: Layout, cls: str, job: str) -> None:
    """Who owns the class's TTFT tail, and the verdict, beside the means above."""
    mine = [(cv.L_JOB, q.eq(job)), (cv.L_CLASS, q.eq(cls))]
    shares = cv.TAIL_STAGE_SHARE + q.matchers(
        [*mine, (cv.L_LATENCY, q.eq("ttft")), (cv.L_QUANTILE, q.eq("p95"))]
    )
    verdict = cv.BOTTLENECK_VERDICT + q.matchers(mine)
    lay.add(timeseries(f"{cls}: who owns the P95+ TTFT (stage shares)",
                       [Query(f"max by (stage) ({shares})", "{{stage}}")], unit="percentunit", stacked=True,
                       description=TAIL_NOTE), w=12)  # fmt: skip
    held = Query(f"max by (verdict) ({verdict}) == 1", "{{verdict}}")
    lay.add(timeseries(f"{cls}: bottleneck verdict", [held], description=TAIL_NOTE), w=12)
    causes = Query(f"max by (verdict, source) ({cv.BOTTLENECK_CAUSE_SECONDS + q.matchers(mine)})",
                   "{{verdict}} ({{source}})")  # fmt: skip
    lay.add(timeseries(f"{cls}: causes (seconds in the tail, by evidence)", [causes], unit="s",
                       description=CAUSE_NOTE), w=24)  # fmt: skip


def build_latency(model: Model, banner: str) -> dict[str, Any]:
    lay = Layout()
    _class_rows(model, lay)
    return dashboard(model, LATENCY_UID, "M3 / Latency breakdown", lay, banner, ("endpoint", "class"))


def build_cache(model: Model, banner: str) -> dict[str, Any]:
    v = vllm_sel(model)

    def hit(w: str, o: str) -> str:
        return (
            f"sum by (endpoint) (rate({cv.VLLM_PREFIX_HITS}{v}[{w}]{o}))\n"
            f"/ sum by (endpoint) (rate({cv.VLLM_PREFIX_QUERIES}{v}[{w}]{o}))"
        )

    lay = Layout()
    lay.row("KV cache")
    lay.add(
        timeseries(
            "KV cache usage",
            [Query(f"max by (endpoint) ({cv.VLLM_KV_USAGE}{v})", "{{endpoint}}")],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Preemptions",
            [Query(f"sum by (endpoint) (rate({cv.VLLM_PREEMPTIONS}{v}[{RATE}]))", "{{endpoint}}")],
        )
    )
    lay.add(
        timeseries(
            "Block size and KV capacity",
            [
                Query(
                    f"max by (endpoint, block_size) ({cv.VLLM_CACHE_CONFIG_INFO}"
                    f'{{job="{model.alerting.job_vllm}",endpoint=~"$endpoint"}})',
                    "{{endpoint}} block_size={{block_size}}",
                ),
            ],
        )
    )
    lay.row("Prefix cache")
    lay.add(
        timeseries(
            "Prefix cache hit rate, now vs 1 day ago",
            [
                Query(hit(RATE, ""), "{{endpoint}} now"),
                Query(hit("1h", " offset 1d"), "{{endpoint}} 1d ago (1h)"),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Prefix cache queried / hit tokens",
            [
                Query(
                    f"sum by (endpoint) (rate({cv.VLLM_PREFIX_QUERIES}{v}[{RATE}]))", "{{endpoint}} queried"
                ),
                Query(f"sum by (endpoint) (rate({cv.VLLM_PREFIX_HITS}{v}[{RATE}]))", "{{endpoint}} hit"),
            ],
        )
    )
    return dashboard(model, CACHE_UID, "M3 / KV and prefix cache", lay, banner, ("endpoint", "model"))


def build_spec(model: Model, banner: str) -> dict[str, Any]:
    v = vllm_sel(model)
    lay = Layout()
    lay.row("Speculative decoding")
    lay.add(
        timeseries(
            "Draft acceptance rate",
            [
                Query(
                    f"sum by (endpoint) (rate({cv.VLLM_SPEC_ACCEPTED}{v}[{RATE}]))\n"
                    f"/ sum by (endpoint) (rate({cv.VLLM_SPEC_DRAFT_TOKENS}{v}[{RATE}]))",
                    "{{endpoint}}",
                ),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Mean accepted length (tokens per draft, incl. bonus)",
            [
                Query(
                    f"1 + sum by (endpoint) (rate({cv.VLLM_SPEC_ACCEPTED}{v}[{RATE}]))\n"
                    f"/ sum by (endpoint) (rate({cv.VLLM_SPEC_DRAFTS}{v}[{RATE}]))",
                    "{{endpoint}}",
                ),
            ],
        )
    )
    lay.add(
        timeseries(
            "Acceptance by draft position",
            [
                Query(
                    f"sum by (endpoint, position) (rate({cv.VLLM_SPEC_ACCEPTED_PER_POS}{v}[{RATE}]))\n"
                    f"/ on (endpoint) group_left sum by (endpoint) (rate({cv.VLLM_SPEC_DRAFTS}{v}[{RATE}]))",
                    "{{endpoint}} pos {{position}}",
                ),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Drafts and draft tokens per second",
            [
                Query(f"sum by (endpoint) (rate({cv.VLLM_SPEC_DRAFTS}{v}[{RATE}]))", "{{endpoint}} drafts"),
                Query(
                    f"sum by (endpoint) (rate({cv.VLLM_SPEC_DRAFT_TOKENS}{v}[{RATE}]))",
                    "{{endpoint}} draft tokens",
                ),
            ],
        )
    )
    return dashboard(model, SPEC_UID, "M3 / Speculative decoding", lay, banner, ("endpoint", "model"))
