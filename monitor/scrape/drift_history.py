"""vLLM's metric history as data: when each family the monitor's consumers read appeared, what
replaced it, when it was hidden and removed, and which flag registers it (docs/collector.md,
"Metric drift"; written from vLLM's release code and docs/usage/metrics.md: deprecated in X.Y,
hidden in X.Y+1 — ``--show-hidden-metrics-for-version=X.Y`` shows it again — removed in X.Y+2).

Versions are the first release that has (``since``) or no longer has (``removed``) the family in
its default registration; None where it is in every release the monitor supports (0.6.3 on) or
is still served by the newest (0.33). :mod:`monitor.scrape.drift` reads this to say *why* a family
a rule, an SLI or a dashboard needs is missing from a page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Family:
    """One exposed family's life in vLLM."""

    name: str
    since: str | None = None
    successor: str | None = None  # the family that replaces it
    hidden: str | None = None  # first release that hides it by default
    removed: str | None = None  # first release without it
    flag: str | None = None  # registered only when vLLM runs with this
    note: str = ""

    @property
    def show_hidden(self) -> str | None:
        """The ``--show-hidden-metrics-for-version`` value that shows it again while hidden."""
        if self.hidden is None:
            return None
        major, minor = (int(p) for p in self.hidden.split(".")[:2])
        return f"{major}.{minor - 1}"


_SPEC = "--speculative-config (speculative decoding)"
# fmt: off
HISTORY: Final[tuple[Family, ...]] = (
    Family("vllm:gpu_cache_usage_perc", successor="vllm:kv_cache_usage_perc", hidden="0.11", removed="0.12"),
    Family("vllm:kv_cache_usage_perc", since="0.9.2", note="V1 engine"),
    Family("vllm:gpu_prefix_cache_queries_total", since="0.7.3", successor="vllm:prefix_cache_queries_total",
           hidden="0.11", removed="0.12", note="V1; counted blocks before 0.9"),
    Family("vllm:gpu_prefix_cache_hits_total", since="0.7.3", successor="vllm:prefix_cache_hits_total",
           hidden="0.11", removed="0.12", note="V1; counted blocks before 0.9"),
    Family("vllm:prefix_cache_queries_total", since="0.9.2"),
    Family("vllm:prefix_cache_hits_total", since="0.9.2"),
    Family("vllm:time_per_output_token_seconds", successor="vllm:inter_token_latency_seconds",
           hidden="0.12", removed="0.20"),
    Family("vllm:inter_token_latency_seconds", since="0.10.2"),
    Family("vllm:request_time_per_output_token_seconds", since="0.11.0"),
    Family("vllm:time_in_queue_requests", since="0.7.3", successor="vllm:request_queue_time_seconds",
           removed="0.9", note="V0"),
    Family("vllm:request_queue_time_seconds", since="0.7.3"),
    Family("vllm:request_prefill_time_seconds", since="0.7.3"),
    Family("vllm:request_decode_time_seconds", since="0.7.3"),
    Family("vllm:request_inference_time_seconds", since="0.7.3"),
    Family("vllm:iteration_tokens_total", since="0.7.3"),
    Family("vllm:request_max_num_generation_tokens", since="0.7.3"),
    Family("vllm:num_preemptions_total"),
    Family("vllm:admission_rejections_total", since="0.33.0"),
    Family("vllm:request_success_total"),
    Family("vllm:prompt_tokens_total"),
    Family("vllm:generation_tokens_total"),
    Family("vllm:num_requests_running"),
    Family("vllm:num_requests_waiting"),
    Family("vllm:time_to_first_token_seconds"),
    Family("vllm:e2e_request_latency_seconds"),
    Family("vllm:request_prompt_tokens"),
    Family("vllm:request_generation_tokens"),
    Family("vllm:cache_config_info"),
    Family("vllm:spec_decode_num_drafts_total", since="0.8.5", flag=_SPEC),
    Family("vllm:spec_decode_num_draft_tokens_total", flag=_SPEC),
    Family("vllm:spec_decode_num_accepted_tokens_total", flag=_SPEC),
    Family("vllm:spec_decode_num_accepted_tokens_per_pos_total", since="0.8.5", flag=_SPEC),
    Family("vllm:kv_block_lifetime_seconds", since="0.12.0", flag="--kv-cache-metrics"),
    Family("vllm:kv_block_idle_before_evict_seconds", since="0.12.0", flag="--kv-cache-metrics"),
    Family("vllm:kv_block_reuse_gap_seconds", since="0.12.0", flag="--kv-cache-metrics"),
    Family("vllm:lora_requests_info", flag="--enable-lora"),
    Family("vllm:estimated_flops_per_gpu_total", since="0.20.0", flag="--enable-mfu-metrics"),
)
# fmt: on
BY_NAME: Final[dict[str, Family]] = {f.name: f for f in HISTORY}
#: Newer name -> the older name it replaced.
PREDECESSOR: Final[dict[str, str]] = {f.successor: f.name for f in HISTORY if f.successor}

#: Label values that appeared later: (family, label, value, since, what a page without it means).
LABEL_VALUES: Final[tuple[tuple[str, str, str, str, str], ...]] = (
    ("vllm:request_success_total", "finished_reason", "error", "0.13.0",
     "this vLLM has no error finish reason: a request that failed inside the engine is not a bad "
     "event of the server availability SLO"),
)  # fmt: skip
