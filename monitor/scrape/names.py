"""The one table that maps every generation of vLLM and SGLang metric names onto canonical fields.

Each :class:`Source` row says: the exposed family ``metric`` (as it appears on the page) feeds the
canonical ``field`` of :class:`monitor.scrape.signals.EngineSignals`. Where several generations
name the same concept, the row with the lowest ``rank`` present for a model/engine wins (the
newest name is rank 0), so a page that exposes both ``vllm:kv_cache_usage_perc`` and the
deprecated ``vllm:gpu_cache_usage_perc`` is read once, from the new name.

``key`` names a label whose value becomes part of the field (``finished_reason`` ->
``finished:stop``); ``where`` pins labels to values (SGLang's per-stage histogram). Every other
label except the model and engine labels is summed away (``is_streaming``, ``pid``,
``engine_type`` ...). This module is data; :mod:`monitor.scrape.reading` interprets it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Kind = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True)
class Source:
    """One exposed family feeding one canonical field."""

    metric: str
    field: str
    kind: Kind
    rank: int = 0  # 0 = newest name; higher = older generation, used only when newer is absent
    key: str | None = None  # label whose value is appended to the field: "finished:stop"
    where: tuple[tuple[str, str], ...] = ()  # labels that must have these values
    note: str = ""


#: The API routes whose HTTP answers are the pool's (its inference traffic).
INFERENCE_ROUTES: Final = ("/v1/chat/completions", "/v1/completions", "/v1/responses")
#: Fields of server-wide families without a model label, read as the page's one model.
MODELLESS_FIELDS: Final = frozenset({"http"})

# fmt: off
SOURCES: Final[tuple[Source, ...]] = (
    # --- vLLM: outcomes and tokens (same exposed names in V0 and V1) ---------------------------
    Source("vllm:request_success_total", "finished", "counter", key="finished_reason"),
    Source("vllm:prompt_tokens_total", "prompt_tokens", "counter"),
    Source("vllm:generation_tokens_total", "generation_tokens", "counter"),
    Source("vllm:num_preemptions_total", "preemptions", "counter"),
    # frontend queue limits (0.33): requests refused before they were queued (answered 429)
    Source("vllm:admission_rejections_total", "admission_rejections", "counter",
           note="0.33+; no engine label (read as engine 0); summed over reason"),
    # prefix cache: 0.9+ names (tokens) before the V1 0.7-0.11 gpu_ names (blocks before 0.9)
    Source("vllm:prefix_cache_queries_total", "prefix_cache_queries", "counter"),
    Source("vllm:gpu_prefix_cache_queries_total", "prefix_cache_queries", "counter", rank=1,
           note="deprecated 0.9.2, hidden 0.11, removed 0.12; counts blocks before 0.9"),
    Source("vllm:prefix_cache_hits_total", "prefix_cache_hits", "counter"),
    Source("vllm:gpu_prefix_cache_hits_total", "prefix_cache_hits", "counter", rank=1,
           note="deprecated 0.9.2, hidden 0.11, removed 0.12; counts blocks before 0.9"),
    Source("vllm:gpu_prefix_cache_hit_rate", "reported_prefix_cache_hit_rate", "gauge",
           note="V0 only; -1 when unused"),
    # speculative decoding (V0 and V1 share the token counters; drafts/per-position are V1 0.8.5+)
    Source("vllm:spec_decode_num_drafts_total", "spec_drafts", "counter"),
    Source("vllm:spec_decode_num_draft_tokens_total", "spec_draft_tokens", "counter"),
    Source("vllm:spec_decode_num_accepted_tokens_total", "spec_accepted_tokens", "counter"),
    Source("vllm:spec_decode_num_accepted_tokens_per_pos_total", "spec_accepted_per_position",
           "counter", key="position"),
    Source("vllm:spec_decode_draft_acceptance_rate", "reported_spec_accept_rate", "gauge",
           note="V0 only"),
    # scheduler state
    Source("vllm:num_requests_running", "running", "gauge"),
    Source("vllm:num_requests_waiting", "waiting", "gauge"),
    Source("vllm:kv_cache_usage_perc", "kv_cache_usage", "gauge"),
    Source("vllm:gpu_cache_usage_perc", "kv_cache_usage", "gauge", rank=1,
           note="V0 and V1 <= 0.11; removed 0.12"),
    # latency histograms
    Source("vllm:time_to_first_token_seconds", "ttft", "histogram"),
    Source("vllm:inter_token_latency_seconds", "itl", "histogram", note="0.10.2+"),
    Source("vllm:time_per_output_token_seconds", "itl", "histogram", rank=1,
           note="per decode step; deprecated 0.10.2, hidden 0.12, gone 0.20"),
    Source("vllm:request_time_per_output_token_seconds", "tpot", "histogram", note="0.11+"),
    Source("vllm:e2e_request_latency_seconds", "e2e", "histogram"),
    Source("vllm:request_queue_time_seconds", "queue", "histogram"),
    Source("vllm:time_in_queue_requests", "queue", "histogram", rank=1, note="V0 0.7-0.8"),
    Source("vllm:request_prefill_time_seconds", "prefill", "histogram"),
    Source("vllm:request_decode_time_seconds", "decode", "histogram"),
    Source("vllm:request_inference_time_seconds", "inference", "histogram"),
    Source("vllm:request_prompt_tokens", "prompt_tokens", "histogram"),
    Source("vllm:request_generation_tokens", "generation_tokens", "histogram"),
    # KV-cache residency (0.12+, only with --kv-cache-metrics; sampled blocks, observed at eviction)
    Source("vllm:kv_block_lifetime_seconds", "kv_block_lifetime", "histogram",
           note="allocation to eviction, one observation per sampled evicted block"),
    Source("vllm:kv_block_idle_before_evict_seconds", "kv_block_idle_before_evict", "histogram",
           note="last access to eviction, one observation per sampled evicted block"),
    Source("vllm:kv_block_reuse_gap_seconds", "kv_block_reuse_gap", "histogram",
           note="gaps between a block's last <= 4 accesses, 0-3 observations per evicted block"),
    # API server HTTP answers by status, inference routes only (not /health or /metrics):
    # prometheus-fastapi-instrumentator's counter (status grouped 2xx/4xx/5xx), no model label
    *(Source("http_requests_total", "http", "counter", key="status", where=(("handler", route),),
             note="status grouped: 2xx, 4xx, 5xx; read as the page's one model")
      for route in INFERENCE_ROUTES),
    # --- SGLang ------------------------------------------------------------------------------
    Source("sglang:num_requests_total", "finished_all", "counter",
           note="every finished request incl. aborts; split into completed/abort"),
    Source("sglang:num_aborted_requests_total", "finished_abort", "counter"),
    Source("sglang:prompt_tokens_total", "prompt_tokens", "counter"),
    Source("sglang:generation_tokens_total", "generation_tokens", "counter"),
    Source("sglang:num_retracted_requests_total", "preemptions", "counter",
           note="retraction is SGLang's preemption"),
    Source("sglang:prompt_tokens_total", "prefix_cache_queries", "counter",
           note="queried tokens = prompt tokens"),
    Source("sglang:cached_tokens_total", "prefix_cache_hits", "counter", note="summed over cache_source"),
    Source("sglang:cache_hit_rate", "reported_prefix_cache_hit_rate", "gauge"),
    Source("sglang:spec_verify_calls_total", "spec_drafts", "counter"),
    Source("sglang:spec_accept_rate", "reported_spec_accept_rate", "gauge"),
    Source("sglang:spec_accept_length", "reported_spec_accept_length", "gauge"),
    Source("sglang:num_running_reqs", "running", "gauge"),
    Source("sglang:num_queue_reqs", "waiting", "gauge"),
    Source("sglang:token_usage", "kv_cache_usage", "gauge"),
    Source("sglang:time_to_first_token_seconds", "ttft", "histogram"),
    Source("sglang:inter_token_latency_seconds", "itl", "histogram", note="0.4.6+; counts tokens"),
    Source("sglang:time_per_output_token_seconds", "itl", "histogram", rank=1, note="<= 0.4.0"),
    Source("sglang:request_time_per_output_token_seconds", "tpot", "histogram"),
    Source("sglang:e2e_request_latency_seconds", "e2e", "histogram"),
    Source("sglang:queue_time_seconds", "queue", "histogram"),
    Source("sglang:per_stage_req_latency_seconds", "prefill", "histogram",
           where=(("stage", "prefill_forward"),)),
    Source("sglang:prompt_tokens_histogram", "prompt_tokens", "histogram"),
    Source("sglang:generation_tokens_histogram", "generation_tokens", "histogram"),
    *(Source("sglang:http_responses_total", "http", "counter", key="status_code",
             where=(("endpoint", route),), note="exact status codes; read as the page's one model")
      for route in INFERENCE_ROUTES),
    # deployment facts SGLang shows as gauges (read into the fingerprint, not into signals)
    Source("sglang:page_size", "block_size", "gauge"),
    Source("sglang:context_len", "max_model_len", "gauge"),
)
# fmt: on

#: Labels that identify the model and the engine (data-parallel rank) of a series.
MODEL_LABEL: Final = "model_name"
ENGINE_LABELS: Final = ("engine", "dp_rank")
#: SGLang scheduler ranks: only rank 0 is read (other ranks repeat the same requests).
RANK_LABELS: Final = ("tp_rank", "pp_rank", "moe_ep_rank", "attn_cp_rank")
DEFAULT_ENGINE: Final = "0"

CACHE_CONFIG_INFO: Final = "vllm:cache_config_info"
PROCESS_START: Final = "process_start_time_seconds"
PREFIXES: Final = ("vllm:", "sglang:")

#: Families only the V0 engine registered (used to name the generation of a page).
V0_ONLY: Final = frozenset(
    {
        "vllm:cpu_cache_usage_perc",
        "vllm:num_requests_swapped",
        "vllm:gpu_prefix_cache_hit_rate",
        "vllm:cpu_prefix_cache_hit_rate",
        "vllm:avg_prompt_throughput_toks_per_s",
        "vllm:avg_generation_throughput_toks_per_s",
        "vllm:time_in_queue_requests",
        "vllm:spec_decode_efficiency",
    }
)
V0_RUNNING_HELP: Final = "Number of requests currently running on GPU."

GENERATIONS: Final = ("vllm-v0", "vllm-v1", "vllm-v1-engine", "sglang")


def sample_index() -> dict[str, list[tuple[Source, str]]]:
    """Exposed sample name -> [(source, part)], part in value/bucket/sum/count/created."""
    index: dict[str, list[tuple[Source, str]]] = {}

    def add(name: str, src: Source, part: str) -> None:
        index.setdefault(name, []).append((src, part))

    for src in SOURCES:
        if src.kind == "histogram":
            for part in ("bucket", "sum", "count", "created"):
                add(f"{src.metric}_{part}", src, part)
        elif src.kind == "counter":
            add(src.metric, src, "value")
            add(src.metric.removesuffix("_total") + "_created", src, "created")
        else:
            add(src.metric, src, "value")
    return index


SAMPLE_INDEX: Final = sample_index()
