"""The ``vllm:`` families the collector deliberately does not read, each with the reason.

Every family a real vLLM exposes is either mapped (:data:`monitor.scrape.names.SOURCES`, or
``vllm:cache_config_info`` into the fingerprint) or listed here; the real-vLLM conformance tier
(tests/real_vllm/test_surface.py) fails on a family that is neither, so a new vLLM release's
families are reviewed, not silently dropped. Reviewed against vLLM 0.32.0 (CPU) and the 0.33
surface the simulator imitates. Some of these are still used by name elsewhere (generated
dashboards read ``iteration_tokens_total``); "ignored" means: not a per-interval signal.
"""

from __future__ import annotations

from typing import Final

_COST = "a cost-model estimate (MFU inputs), not an observation of service quality"
_CONNECTOR = "KV-connector (LMCache/offload) prefix cache; not deployed for M3"
_SPLIT = "a finer split of a mapped total; the SLOs need only the total"

IGNORED_FAMILIES: Final[dict[str, str]] = {
    "vllm:estimated_flops_per_gpu_total": _COST + " (0.32; gone in 0.33)",
    "vllm:estimated_read_bytes_per_gpu_total": _COST + " (0.32; gone in 0.33)",
    "vllm:estimated_write_bytes_per_gpu_total": _COST + " (0.32; gone in 0.33)",
    "vllm:num_requests_waiting_by_reason": _SPLIT + " (num_requests_waiting by capacity/deferred)",
    "vllm:engine_sleep_state": "sleep-mode state (weights offloaded); a sleeping engine fails probes anyway",
    "vllm:external_prefix_cache_queries_total": _CONNECTOR,
    "vllm:external_prefix_cache_hits_total": _CONNECTOR,
    "vllm:mm_cache_queries_total": "multimodal input-processor cache; not part of any SLO",
    "vllm:mm_cache_hits_total": "multimodal input-processor cache; not part of any SLO",
    "vllm:prompt_tokens_by_source_total": _SPLIT + " (prompt_tokens_total by local/external compute)",
    "vllm:prompt_tokens_cached_total": "prefix-cache hits in tokens again; read from prefix_cache_hits_total",
    "vllm:prompt_tokens_cached_by_source_total": _SPLIT + " (cached prompt tokens by cache source)",
    "vllm:iteration_tokens_total": "tokens per engine step (batch shape); a dashboard panel, not a signal",
    "vllm:request_max_num_generation_tokens": "requested output budget (client behaviour), dashboard only",
    "vllm:request_params_n": "requested n (client behaviour)",
    "vllm:request_params_max_tokens": "requested max_tokens (client behaviour)",
    "vllm:request_num_preemptions": _SPLIT + " (preemptions per request; the total is num_preemptions_total)",
    "vllm:request_prefill_kv_computed_tokens": "prompt tokens computed (not cached) per request; "
    "prefix-cache hit rate comes from the cache counters",
    "vllm:tool_call_parser_invocations_total": "parser invocations by outcome (tool_call / no_tool_call), "
    "per choice or per streamed delta; a failed parse counts as no_tool_call, so it cannot tell a broken "
    "tool call from a plain answer: the tool-call probe judges the parsed calls themselves",
}

#: The labels each reason above relies on (a split's splitting label, the outcome a reason
#: discusses): tests check them against every page that serves the family (held pages, the
#: simulator, a real vLLM), so a reason cannot outlive what it says about the page.
IGNORED_LABELS: Final[dict[str, tuple[str, ...]]] = {
    "vllm:num_requests_waiting_by_reason": ("reason",),
    "vllm:prompt_tokens_by_source_total": ("source",),
    "vllm:prompt_tokens_cached_by_source_total": ("source",),
    "vllm:tool_call_parser_invocations_total": ("mode", "outcome"),
}
