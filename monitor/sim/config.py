"""Settings of one simulated vLLM server (what ``m3mon sim`` flags set)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from monitor import vllm_buckets
from monitor.conventions import M3_BLOCK_SIZE, M3_MODEL_ID
from monitor.sim.faults import Faults

#: vLLM release the simulator impersonates (``GET /version``, metric families and HELP texts).
VLLM_VERSION = "0.33.0"


@dataclass(frozen=True)
class SimConfig:
    """Everything that shapes the simulated server; defaults mimic MiniMax-M3 on one H200 node.

    Latencies are seconds, throughputs tokens per second. ``span_exporter`` is an OpenTelemetry
    ``SpanExporter`` used instead of the OTLP exporter (tests pass an in-memory one).
    """

    host: str = "127.0.0.1"
    port: int = 8000
    model: str = M3_MODEL_ID
    max_model_len: int = 131072
    block_size: int = M3_BLOCK_SIZE
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    max_queue: int = 1024
    kv_blocks: int = 8192
    prefill_tps: float = 40000.0
    prefill_overhead: float = 0.004
    #: the API server's preprocessing before the engine queues a request (chat template,
    #: tokenizer, image patches): ``preprocess_overhead + prompt_tokens / tokenize_tps`` seconds
    preprocess_overhead: float = 0.001
    tokenize_tps: float = 1_000_000.0
    decode_itl: float = 0.02
    batch_slowdown: float = 1.0
    jitter: float = 0.05
    spec_tokens: int = 3
    spec_acceptance: tuple[float, ...] = (0.86, 0.81, 0.76)
    seed: int = 0
    faults: Faults = field(default_factory=Faults)
    startup_delay: float = 0.0
    api_key: str | None = None
    otlp_traces_endpoint: str | None = None
    enable_per_request_metrics: bool = False
    enable_prompt_tokens_details: bool = True
    reasoning_tokens: int = 48
    answer_tokens: tuple[int, int] = (24, 72)
    image_patch: int = 28
    gpu_memory_utilization: float = 0.9
    kv_cache_metrics: bool = False  # vLLM --kv-cache-metrics: the kv_block_* residency histograms
    kv_cache_metrics_sample: float = 0.01  # --kv-cache-metrics-sample: share of blocks sampled
    dcgm_gpus: int = 0  # GPUs of the DCGM surface at /dcgm/metrics (0: not served)
    span_exporter: Any = None
    #: Spans also carry the request's ``user`` as ``user.id`` and its ``priority`` as
    #: ``vllm.request.priority``, as a gateway in front of vLLM tags them (vLLM's own span does not).
    tenant_span_attributes: bool = False
    #: The spans' resource ``service.name`` when ``OTEL_SERVICE_NAME`` is not set (several simulators
    #: in one process, as in the demo, each name their endpoint this way).
    service_name: str = "vllm-server"

    def with_overrides(self, **overrides: Any) -> SimConfig:
        """A copy with the given fields replaced (unknown names raise ``TypeError``)."""
        return replace(self, **overrides)

    def request_token_buckets(self) -> list[float]:
        """vLLM's ``build_1_2_5_buckets(max_model_len)``: 1, 2, 5, 10, ... up to max_model_len."""
        return list(vllm_buckets.request_tokens(self.max_model_len))
