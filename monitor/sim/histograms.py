"""The simulator's per-request histograms: vLLM 0.33's names, HELP texts and default buckets.

Observed as vLLM observes them: TTFT at the first token, ITL per decode step, iteration tokens
per engine step, everything else once per finished request.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

from monitor import vllm_buckets
from monitor.sim.config import SimConfig

#: Base labels of every engine family.
L = ["model_name", "engine"]
REQUEST_LATENCY = list(vllm_buckets.REQUEST_LATENCY)
TTFT = list(vllm_buckets.TIME_TO_FIRST_TOKEN)
ITL = list(vllm_buckets.INTER_TOKEN_LATENCY)


class RequestHistograms:
    """One child per histogram family, labelled for the simulated engine."""

    def __init__(self, r: CollectorRegistry, config: SimConfig, labels: tuple[str, str]) -> None:
        lb, tok = labels, config.request_token_buckets()

        def hist(name: str, doc: str, buckets: list[float]) -> Histogram:
            h = Histogram(name, doc, L, buckets=buckets, registry=r)
            return h.labels(*lb)

        self.prompt = hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tok)
        self.generation = hist(
            "vllm:request_generation_tokens", "Number of generation tokens processed.", tok
        )
        self.iteration = hist(
            "vllm:iteration_tokens_total",
            "Histogram of number of tokens per engine_step.",
            [float(b) for b in vllm_buckets.ITERATION_TOKENS],
        )
        self.max_gen = hist(
            "vllm:request_max_num_generation_tokens",
            "Histogram of maximum number of requested generation tokens.",
            tok,
        )
        self.n = hist(
            "vllm:request_params_n",
            "Histogram of the n request parameter.",
            [float(b) for b in vllm_buckets.REQUEST_PARAMS_N],
        )
        self.max_tokens = hist(
            "vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", tok
        )
        self.ttft = hist(
            "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT
        )
        self.itl = hist(
            "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL
        )
        self.tpot = hist(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            ITL,
        )
        self.e2e = hist(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            REQUEST_LATENCY,
        )
        self.queue = hist(
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            REQUEST_LATENCY,
        )
        self.inference = hist(
            "vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.",
            REQUEST_LATENCY,
        )
        self.prefill = hist(
            "vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.",
            REQUEST_LATENCY,
        )
        self.decode = hist(
            "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.",
            REQUEST_LATENCY,
        )
        self.preempt = hist(
            "vllm:request_num_preemptions",
            "Histogram of the number of times a request was preempted.",
            [float(b) for b in vllm_buckets.REQUEST_NUM_PREEMPTIONS],
        )
        self.kv_computed = hist(
            "vllm:request_prefill_kv_computed_tokens",
            "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
            tok,
        )
