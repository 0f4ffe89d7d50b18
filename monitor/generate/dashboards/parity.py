"""Which panel of ours stands for each panel of vLLM's example dashboards.

Every panel of vLLM 0.33's ``prometheus_grafana/grafana.json`` (G), ``performance_statistics.json``
(P) and ``query_statistics.json`` (Q) has a counterpart on the ``m3mon-vllm-engine`` dashboard,
querying the same vLLM metric families under their current names. The tests check that each
counterpart exists and queries every listed family.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor import conventions as cv


@dataclass(frozen=True)
class Counterpart:
    source: str  # "G", "P" or "Q" (see the module docstring)
    upstream_title: str
    title: str  # our panel title on the engine dashboard
    metrics: tuple[str, ...]  # vLLM families (as exposed, without _bucket/_sum/_count) it must query


_E2E, _TTFT, _ITL = cv.VLLM_E2E, cv.VLLM_TTFT, cv.VLLM_ITL
_TOK = (cv.VLLM_PROMPT_TOKENS, cv.VLLM_GENERATION_TOKENS)


def _stats(source: str, upstream: str, ours: str, metric: str) -> list[Counterpart]:
    return [
        Counterpart(source, f"{upstream} ({label})", f"{ours} ({label})", (metric,))
        for label in ("P50", "P90", "P99", "Avg")
    ]


COUNTERPARTS: tuple[Counterpart, ...] = (
    Counterpart("G", "E2E Request Latency", "E2E request latency", (_E2E,)),
    Counterpart("G", "Token Throughput", "Token throughput", _TOK),
    Counterpart("G", "Inter Token Latency", "Inter-token latency", (_ITL,)),
    Counterpart("G", "Time Per Output Token (TPOT)", "Time per output token (TPOT)", (cv.VLLM_TPOT,)),
    Counterpart("G", "Scheduler State", "Scheduler state", (cv.VLLM_RUNNING, cv.VLLM_WAITING)),
    Counterpart("G", "Time To First Token Latency", "Time to first token", (_TTFT,)),
    Counterpart("G", "Cache Utilization", "KV cache utilization", (cv.VLLM_KV_USAGE,)),
    Counterpart("G", "Request Prompt Length", "Request prompt length", (cv.VLLM_PROMPT_TOKENS_HIST,)),
    Counterpart(
        "G", "Request Generation Length", "Request generation length", (cv.VLLM_GENERATION_TOKENS_HIST,)
    ),
    Counterpart("G", "Finish Reason", "Finish reason", (cv.VLLM_REQUEST_SUCCESS,)),
    Counterpart("G", "Queue Time", "Queue time", (cv.VLLM_QUEUE,)),
    Counterpart(
        "G", "Requests Prefill and Decode Time", "Prefill and decode time", (cv.VLLM_PREFILL, cv.VLLM_DECODE)
    ),
    Counterpart(
        "G",
        "Max Generation Token in Sequence Group",
        "Max generation tokens requested",
        (cv.VLLM_MAX_GEN_TOKENS_HIST,),
    ),
    Counterpart("P", "E2E Latency over Time", "E2E request latency", (_E2E,)),
    *_stats("P", "E2E Latency", "E2E", _E2E),
    Counterpart("P", "TTFT Over Time", "Time to first token", (_TTFT,)),
    *_stats("P", "TTFT", "TTFT", _TTFT),
    Counterpart("P", "ITL (Time Per Output Token) Over Time", "Inter-token latency", (_ITL,)),
    *_stats("P", "ITL", "ITL", _ITL),
    Counterpart(
        "P", "TPS (Tokens Per Second) Over Time", "Token throughput", (*_TOK, cv.VLLM_ITERATION_TOKENS)
    ),
    Counterpart("Q", "Successful Requests Over Time", "Successful requests", (cv.VLLM_REQUEST_SUCCESS,)),
    Counterpart("Q", "Requests Avg Rate", "Request rate (avg)", (cv.VLLM_REQUEST_SUCCESS,)),
    Counterpart("Q", "p50 Latency", "E2E latency by model (P50/P90/P99)", (_E2E,)),
    Counterpart("Q", "p90 Latency", "E2E latency by model (P50/P90/P99)", (_E2E,)),
    Counterpart("Q", "p99 Latency", "E2E latency by model (P50/P90/P99)", (_E2E,)),
    Counterpart("Q", "Input Token Size Distribution", "Request prompt length", (cv.VLLM_PROMPT_TOKENS_HIST,)),
    Counterpart("Q", "Input Token Size p50", "Input tokens per request (P50)", (cv.VLLM_PROMPT_TOKENS_HIST,)),
    Counterpart("Q", "Input Token Size p90", "Input tokens per request (P90)", (cv.VLLM_PROMPT_TOKENS_HIST,)),
    Counterpart("Q", "Input Token Size p99", "Input tokens per request (P99)", (cv.VLLM_PROMPT_TOKENS_HIST,)),
    Counterpart(
        "Q",
        "Input Token Size Avg",
        "Input tokens per request (Avg)",
        (cv.VLLM_PROMPT_TOKENS, cv.VLLM_REQUEST_SUCCESS),
    ),
    Counterpart("Q", "Input Tokens Over Time", "Input tokens by model", (cv.VLLM_PROMPT_TOKENS,)),
    Counterpart("Q", "Input Tokens/Sec Avg", "Input tokens/s (avg)", (cv.VLLM_PROMPT_TOKENS,)),
    Counterpart("Q", "Output Tokens Over Time", "Output tokens by model", (cv.VLLM_GENERATION_TOKENS,)),
    Counterpart("Q", "Output Tokens/Sec Avg", "Output tokens/s (avg)", (cv.VLLM_GENERATION_TOKENS,)),
)
