"""Small builders of probe results and signals for store tests."""

from __future__ import annotations

import math

from monitor.probes.result import ProbeResult, Timings, Usage
from monitor.scrape.signals import EngineSignals, Histogram, Signals

T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC, a Thursday


def probe(at: float, reason: str | None = None, ttft: float = 0.8, kind: str = "chat") -> ProbeResult:
    return ProbeResult(
        endpoint="m3-interactive",
        request_class="interactive-32k",
        kind=kind,
        started_at=at,
        reason=reason,
        timings=Timings(ttft=ttft, e2e=3.0, itl_samples=(0.02, 0.03), itl_mean=0.025, tpot=0.03),
        usage=Usage(prompt_tokens=100, completion_tokens=50),
        model="MiniMaxAI/MiniMax-M3",
        detail="" if reason is None else "failed",
        extra={"cold_ttft": 1.5, "nan": math.nan},
        log=("sent", "done"),
    )


def signals(start: float, end: float, ok: float = 90, errors: float = 10, reset: bool = False) -> Signals:
    ttft = Histogram((0.5, 1.0, 2.5, 5.0, math.inf), (50, 80, 95, 99, 100), 120.0, 100)
    itl = Histogram((0.05, 0.1, math.inf), (70, 98, 100), 5.0, 100)
    total = EngineSignals(
        finished={"stop": ok, "error": errors},
        histograms={"ttft": ttft, "itl": itl},
        preemptions=3,
        running=4,
        waiting=7,
        kv_cache_usage=0.83,
    )
    return Signals(
        "m3-interactive",
        "vllm",
        "vllm-v1-engine",
        "MiniMaxAI/MiniMax-M3",
        end,
        start,
        reset,
        {"0": total},
        total,
    )
