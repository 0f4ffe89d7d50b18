"""What a :mod:`monitor.sim.worlds` pool's pages show, as the store would hold them: vLLM's or
SGLang's stage histograms (each with its own bucket edges and the stages its page has), the API
server's HTTP answers, real requests as vLLM's spans give them, and the GPU exporter's counters
in the counter set a cluster runs.
"""

from __future__ import annotations

import random

from monitor.bottleneck.tail import SOURCE_SPANS, Sample
from monitor.sim.world_pool import Pool, Req
from monitor.vllm_buckets import REQUEST_LATENCY, TIME_TO_FIRST_TOKEN, request_tokens

PROMPT_EDGES = request_tokens(131072)


#: SGLang 0.5.23's bucket edges (/work/shared/fixtures/generated/sglang-0.5.23.metrics.txt)
# fmt: off
SGLANG_QUEUE = (0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 15.0, 20.0,
                30.0, 40.0, 50.0, 60.0, 100.0, 200.0, 500.0, 1000.0)
SGLANG_LATENCY = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0,
                  200.0, 400.0, 600.0, 1200.0)
# fmt: on
SGLANG_STAGE = tuple(round(0.001 * 1.62**k, 6) for k in range(30))
#: the stage histograms each server's page has (canonical names, monitor.scrape.names)
SURFACE = {
    "vllm": ("queue", "prefill", "decode", "e2e", "ttft", "prompt_tokens"),
    "sglang": ("queue", "prefill", "e2e", "ttft", "prompt_tokens"),
    "sglang-0.4": ("e2e", "ttft"),
}
EDGES = {"queue": REQUEST_LATENCY, "prefill": REQUEST_LATENCY, "decode": REQUEST_LATENCY,
          "e2e": REQUEST_LATENCY, "ttft": TIME_TO_FIRST_TOKEN, "prompt_tokens": PROMPT_EDGES}  # fmt: skip


def device(level: float, memory: float, counters: str, running: bool, rng: random.Random) -> dict[str, float]:
    sm = min(1.0, max(0.0, level + rng.gauss(0, 0.015)))
    dram = min(1.0, max(0.0, memory + rng.gauss(0, 0.015)))
    busy = 1.0 if running else 0.0
    power = {"power_watts": 150 + 500 * max(sm, 0.6 * dram), "power_limit_watts": 700.0}
    if counters == "default":  # GPU_UTIL and GR_ENGINE_ACTIVE: any kernel running, a coarse gauge
        return {"util": busy, "gr_engine_active": min(1.0, busy * (0.9 + 0.1 * sm)),
                "memory_active": dram, "memory_copy_util": dram, **power}  # fmt: skip
    if counters == "nvml":  # no DCP (profiling unavailable or held by another profiler)
        return {"util": busy, "memory_copy_util": dram, **power}
    if counters == "util":  # the oldest default: DCGM_FI_DEV_GPU_UTIL alone
        return {"util": busy}
    if counters == "power":  # power draw and its limit only
        return power
    if counters == "sm":  # a profiling set without the memory interface (DRAM_ACTIVE left out)
        return {"sm_active": sm, "tensor_active": 0.5 * sm, "util": busy}
    if counters == "amd":
        return {"util": busy, "sm_active": sm, "memory_active": dram, "power_watts": power["power_watts"]}
    return {"sm_active": sm, "tensor_active": 0.5 * sm, "gr_engine_active": min(1.0, sm + 0.05),
            "memory_active": dram, "util": busy}  # fmt: skip


def edges(server: str) -> dict[str, tuple[float, ...]]:
    if server == "vllm":
        return EDGES
    sglang = {"queue": SGLANG_QUEUE, "prefill": SGLANG_STAGE, "ttft": SGLANG_LATENCY, "e2e": SGLANG_LATENCY}
    return {**EDGES, **sglang}


def span_sample(r: Req) -> Sample:
    """A real request as vLLM's spans give it (no gateway: TTFT and e2e are the server's)."""
    assert r.admitted is not None
    queue = r.admitted - r.arrive
    parts = {"tokenization": r.tokenize, "queue": queue, "prefill": r.prefill, "decode": r.decode}
    ttft = r.tokenize + queue + r.prefill
    return Sample("chat", r.arrive - r.tokenize, parts, SOURCE_SPANS, ttft, ttft + r.decode)


def http(pool: Pool) -> dict[str, float]:
    """The API server's answers: vLLM groups them by class, SGLang (0.5) counts exact codes."""
    if pool.w.server == "vllm":
        return dict(pool.http)
    if pool.w.server == "sglang":
        return {{"2xx": "200", "4xx": "429", "5xx": "500"}[k]: v for k, v in pool.http.items()}
    return {}
