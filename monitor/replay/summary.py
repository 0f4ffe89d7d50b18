"""What a replay run reports: throughput, P50/P95/P99 of TTFT, TPOT, ITL and e2e, error
categories and goodput.

Definitions (docs/contract.md compares them with ``vllm bench serve``, GuideLLM and AIPerf):

* **Duration**: first request sent → last request finished (``vllm bench serve``'s
  ``benchmark_duration``). Throughput: finished requests / duration, output tokens / duration
  (of successful requests), total tokens (prompt + output) / duration.
* **TTFT, TPOT, e2e**: one value per successful request (the probes' definitions,
  :mod:`monitor.probes.timing`). **ITL**: every per-token sample of every successful request,
  pooled (a chunk gap covering ``k`` tokens gives ``k`` samples of ``gap / k``).
* **Percentiles**: nearest rank over the samples (``monitor.probes.timing.percentile``);
  ``vllm bench serve`` interpolates linearly (``numpy.percentile``), which differs by at most
  one sample's rank.
* **Errors**: counted by the probe judge's categories (docs/probes.md).
* **Goodput**: :mod:`monitor.slo.goodput` — the share of requests (failed ones included in the
  denominator) meeting every latency limit of the class at once, plus good requests and good
  output tokens per second. A request's figures are the probes' (:mod:`monitor.slo.probe_goodput`):
  ``itl`` = its mean per-token ITL, ``stall`` = its longest gap between two chunks, and ``ttft``,
  ``tpot``, ``e2e``, ``queue_time`` as measured, so a replayed request and a probe run with the
  same timings get the same verdict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from monitor.model import SLO
from monitor.probes.timing import percentile
from monitor.replay.requests import Outcome
from monitor.replay.sizing import MEASURED
from monitor.slo.goodput import RequestLatency, goodput, limits

METRICS = ("ttft", "tpot", "itl", "e2e")
QUANTILES = (50, 95, 99)


@dataclass(frozen=True)
class ReplaySummary:
    """One replay run, reduced (stored as JSON in ``replay_runs.summary``)."""

    requests: int
    succeeded: int
    duration: float
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    percentiles: dict[str, dict[str, float | None]]  # metric -> {"p50": s, "p95": s, "p99": s, "mean": s}
    errors: dict[str, int]
    goodput_ratio: float | None
    goodput_request_rate: float
    goodput_token_rate: float
    goodput_limits: dict[str, float]
    prompt_token_error: float | None  # mean |server prompt tokens − planned| / planned
    samples: dict[str, list[float]] = field(default_factory=dict)  # per-request values, for compare
    prompt_sizing: str = MEASURED  # how the prompts were sized (monitor.replay.sizing)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReplaySummary:
        return cls(**d)


def metric_values(outcomes: Sequence[Outcome], metric: str) -> list[float]:
    """Samples of ``metric`` over the successful outcomes (ITL pooled per token)."""
    ok = [o for o in outcomes if o.ok]
    if metric == "itl":
        return [s for o in ok for s in o.timings.itl_samples]
    values = (getattr(o.timings, metric) for o in ok)
    return [max(0.0, v) for v in values if v is not None]


def request_latency(o: Outcome) -> RequestLatency:
    """The request for :mod:`monitor.slo.goodput`, with the figures a probe run has
    (``monitor.slo.probe_goodput.request_latency``; tests/replay/test_goodput_definition.py)."""
    t = o.timings
    longest = t.longest_gap
    stall = longest.seconds if longest is not None else None
    return RequestLatency(ok=o.ok, ttft=t.ttft, tpot=t.tpot, itl=t.itl_mean, e2e=t.e2e,
                          queue_time=t.server_queue, stall=stall)  # fmt: skip


def summarize(
    outcomes: Sequence[Outcome], ends: Sequence[float], slos: Sequence[SLO], sizing: str = MEASURED
) -> ReplaySummary:
    """Reduce a run's outcomes; ``ends`` are the monotonic finish times (same order)."""
    start = min((o.sent_at for o in outcomes), default=0.0)
    duration = max(max(ends, default=start) - start, 1e-9)
    ok = [o for o in outcomes if o.ok]
    out_tokens = sum(o.output_tokens or 0 for o in ok)
    in_tokens = sum(o.prompt_tokens or 0 for o in ok)
    pct: dict[str, dict[str, float | None]] = {}
    samples: dict[str, list[float]] = {}
    for metric in METRICS:
        values = metric_values(outcomes, metric)
        pct[metric] = {f"p{q}": percentile(values, q) for q in QUANTILES}
        pct[metric]["mean"] = sum(values) / len(values) if values else None
        if metric != "itl":
            samples[metric] = values
    bound = limits(slos)
    gp = goodput(((request_latency(o), o.output_tokens or 0) for o in outcomes), bound, duration)
    sized = [
        abs(o.prompt_tokens - o.planned.prompt_tokens) / o.planned.prompt_tokens
        for o in ok
        if o.prompt_tokens is not None and o.planned.kind in ("text", "reasoning")
    ]
    return ReplaySummary(
        requests=len(outcomes),
        succeeded=len(ok),
        duration=duration,
        request_throughput=len(ok) / duration,
        output_throughput=out_tokens / duration,
        total_token_throughput=(out_tokens + in_tokens) / duration,
        percentiles=pct,
        errors=dict(sorted(Counter(o.reason for o in outcomes if o.reason is not None).items())),
        goodput_ratio=gp.ratio,
        goodput_request_rate=gp.request_rate,
        goodput_token_rate=gp.token_rate,
        goodput_limits=bound,
        prompt_token_error=sum(sized) / len(sized) if sized else None,
        samples=samples,
        prompt_sizing=sizing,
    )
