"""The simulator's ``/metrics``: vLLM 0.33.0 V1 families, names, types, labels, HELP and buckets.

One :class:`SimMetrics` owns a dedicated ``CollectorRegistry`` (so several simulators can live in
one process, and a simulated restart gets fresh ``_created`` series and a new process start
time). Registration order follows vLLM: python/process collectors, spec decode, core engine
families, ``vllm:cache_config_info``, then the prometheus-fastapi-instrumentator HTTP families.
Counters and histograms move as vLLM moves them: prompt tokens and TTFT at the first token,
generation tokens and ITL per step, everything per-request when the request finishes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from monitor.sim.config import SimConfig
from monitor.sim.histograms import L, RequestHistograms
from monitor.sim.http_metrics import HttpMetrics
from monitor.sim.request import SimRequest
from monitor.sim.residency import ResidencyHistograms

FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")


class _RestartableProcessCollector(ProcessCollector):
    """``process_*`` metrics whose start time is the simulated server's (it moves on restart)."""

    def __init__(self, start_time: float, registry: CollectorRegistry) -> None:
        self._sim_start = start_time
        super().__init__(registry=registry)

    def collect(self) -> Iterable[Metric]:
        for family in super().collect():
            if family.name == "process_start_time_seconds":
                family.samples = [s._replace(value=self._sim_start) for s in family.samples]
            yield family


class SimMetrics:
    """All families of one simulated server, plus the hooks the engine calls."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.start_time = time.time()
        self.registry = r = CollectorRegistry(auto_describe=True)
        GCCollector(registry=r)
        PlatformCollector(registry=r)
        _RestartableProcessCollector(self.start_time, r)
        self.labels = (config.model, "0")
        self._tool_parser(r)
        self._spec_decode(r)
        self._core(r)
        self.h = RequestHistograms(r, config, self.labels)
        self.residency = ResidencyHistograms(r, L, self.labels) if config.kv_cache_metrics else None
        self._cache_config(r)
        self.http = HttpMetrics(r)

    # --- registration ----------------------------------------------------------------------

    def _tool_parser(self, r: CollectorRegistry) -> None:
        self.tool_parser = Counter(
            "vllm:tool_call_parser_invocations",
            "Total number of ToolParser invocations. Non-streaming increments once per choice; "
            "streaming increments once per delta.",
            ["model_name", "mode", "outcome", "request_type"],
            registry=r,
        )
        for mode in ("streaming", "non_streaming"):
            for outcome in ("tool_call", "no_tool_call"):
                for rt in ("chat_completions", "responses", "other"):
                    self.tool_parser.labels(self.config.model, mode, outcome, rt)

    def _spec_decode(self, r: CollectorRegistry) -> None:
        k = self.config.spec_tokens
        self.spec_enabled = k > 0
        if not self.spec_enabled:
            return
        self.spec_drafts = Counter(
            "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", L, registry=r
        )
        self.spec_draft_tokens = Counter(
            "vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", L, registry=r
        )
        self.spec_accepted = Counter(
            "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", L, registry=r
        )
        self.spec_per_pos = Counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            [*L, "position"],
            registry=r,
        )
        # children bound once: the engine counts speculative tokens every step
        self._spec_children = tuple(
            c.labels(*self.labels) for c in (self.spec_drafts, self.spec_draft_tokens, self.spec_accepted)
        )
        self._spec_pos = [self.spec_per_pos.labels(*self.labels, str(pos)) for pos in range(k)]

    def _core(self, r: CollectorRegistry) -> None:
        lb = self.labels
        self.running = Gauge(
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            L,
            registry=r,
            multiprocess_mode="mostrecent",
        ).labels(*lb)
        self.waiting = Gauge(
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            L,
            registry=r,
            multiprocess_mode="mostrecent",
        ).labels(*lb)
        by_reason = Gauge(
            "vllm:num_requests_waiting_by_reason",
            "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling "
            "capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked "
            "status). Sum of all reasons equals vllm:num_requests_waiting.",
            [*L, "reason"],
            registry=r,
            multiprocess_mode="mostrecent",
        )
        self.waiting_capacity = by_reason.labels(*lb, "capacity")
        by_reason.labels(*lb, "deferred").set(0)
        sleep = Gauge(
            "vllm:engine_sleep_state",
            "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "
            "weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
            [*L, "sleep_state"],
            registry=r,
            multiprocess_mode="mostrecent",
        )
        sleep.labels(*lb, "awake").set(1)
        sleep.labels(*lb, "weights_offloaded").set(0)
        sleep.labels(*lb, "discard_all").set(0)
        self.kv_usage = Gauge(
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            L,
            registry=r,
            multiprocess_mode="mostrecent",
        ).labels(*lb)

        def counter(name: str, doc: str) -> Counter:
            c = Counter(name, doc, L, registry=r)
            return c.labels(*lb)

        self.pc_queries = counter(
            "vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens."
        )
        self.pc_hits = counter(
            "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."
        )
        counter(
            "vllm:external_prefix_cache_queries",
            "External prefix cache queries from KV connector "
            "cross-instance cache sharing, in terms of number of queried tokens.",
        )
        counter(
            "vllm:external_prefix_cache_hits",
            "External prefix cache hits from KV connector cross-instance "
            "cache sharing, in terms of number of cached tokens.",
        )
        self.mm_queries = counter(
            "vllm:mm_cache_queries", "Multi-modal cache queries, in terms of number of queried items."
        )
        self.mm_hits = counter(
            "vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items."
        )
        self.preemptions = counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.")
        self.prompt_tokens = counter("vllm:prompt_tokens", "Number of prefill tokens processed.")
        by_source = Counter(
            "vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", [*L, "source"], registry=r
        )
        self.prompt_local = by_source.labels(*lb, "local_compute")
        self.prompt_hit = by_source.labels(*lb, "local_cache_hit")
        by_source.labels(*lb, "external_kv_transfer")
        self.prompt_cached = counter(
            "vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external)."
        )
        cached_src = Counter(
            "vllm:prompt_tokens_cached_by_source",
            "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), host "
            "(offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or "
            "external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + "
            "vllm:external_prefix_cache_hits.",
            [*L, "source"],
            registry=r,
        )
        self.cached_device = cached_src.labels(*lb, "device")
        for src in ("host", "p2p", "disk", "external_unspecified"):
            cached_src.labels(*lb, src)
        self.generation_tokens = counter("vllm:generation_tokens", "Number of generation tokens processed.")
        success = Counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [*L, "finished_reason"],
            registry=r,
        )
        self.success = {reason: success.labels(*lb, reason) for reason in FINISHED_REASONS}
        rejections = Counter(
            "vllm:admission_rejections",
            "Number of admission attempts rejected by a queue limit, by reason.",
            ["model_name", "reason"],
            registry=r,
        )
        self.rejections = rejections.labels(self.config.model, "max_num_queued_reqs")
        rejections.labels(self.config.model, "max_num_queued_tokens")

    def _cache_config(self, r: CollectorRegistry) -> None:
        cfg = self.config
        # vLLM 0.32.0's CacheConfig label set (checked against a real server by tests/real_vllm);
        # the values are a GPU deployment's defaults.
        info = {
            "_block_size_resolved": "True",
            "block_size": str(cfg.block_size),
            "cache_dtype": "auto",
            "cache_hit_alignment_tokens": "None",
            "effective_attention_block_size": str(cfg.block_size),
            "enable_mamba_shared_prefix_checkpoint": "False",
            "enable_prefix_caching": "True",
            "engine": "0",
            "gpu_memory_utilization": str(cfg.gpu_memory_utilization),
            "hash_block_size": "None",
            "is_attention_free": "False",
            "kv_cache_dtype_skip_layers": "[]",
            "kv_cache_layout": "None",
            "kv_cache_max_concurrency": str(round(cfg.kv_blocks * cfg.block_size / cfg.max_model_len, 2)),
            "kv_cache_memory_bytes": "None",
            "kv_cache_size_tokens": str(cfg.kv_blocks * cfg.block_size),
            "kv_offloading_backend": "native",
            "kv_offloading_size": "None",
            "kv_sharing_fast_prefill": "False",
            "mamba_block_size": "None",
            "mamba_cache_dtype": "auto",
            "mamba_cache_mode": "none",
            "mamba_page_size_padded": "None",
            "mamba_ssm_cache_dtype": "auto",
            "num_cpu_blocks": "None",
            "num_gpu_blocks": str(cfg.kv_blocks),
            "num_gpu_blocks_override": "None",
            "prefix_cache_retention_interval": "0",
            "prefix_caching_hash_algo": "sha256",
            "prefix_match_unit": "None",
            "replayssm_buffer_len": "16",
            "skip_page_size_padded": "None",
            "sliding_window": "None",
            "swa_bounded_replay": "True",
            "use_kda_recoverssm": "False",
            "use_replayssm": "False",
            "user_specified_block_size": "True",
        }
        g = Gauge(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            list(info),
            registry=r,
            multiprocess_mode="mostrecent",
        )
        g.labels(**info).set(1)

    # --- hooks called by the engine --------------------------------------------------------

    def gauges(self, running: int, waiting: int, kv_usage: float) -> None:
        self.running.set(running)
        self.waiting.set(waiting)
        self.waiting_capacity.set(waiting)
        self.kv_usage.set(kv_usage)

    def prefix_cache(self, queried: int, hits: int) -> None:
        self.pc_queries.inc(queried)
        self.pc_hits.inc(hits)

    def preempted(self) -> None:
        self.preemptions.inc()

    def rejected(self) -> None:
        self.rejections.inc()

    def spec(self, draft_tokens: int, accepted: int) -> None:
        if not self.spec_enabled:
            return
        self.spec_batch(1, draft_tokens, accepted, [1] * accepted)

    def spec_batch(self, drafts: int, draft_tokens: int, accepted: int, per_position: list[int]) -> None:
        """Speculative decoding of a whole step at once: ``per_position[i]`` tokens accepted at i."""
        if not self.spec_enabled or not drafts:
            return
        d, t, a = self._spec_children
        d.inc(drafts)
        t.inc(draft_tokens)
        a.inc(accepted)
        for pos, n in enumerate(per_position):
            if n:
                self._spec_pos[pos].inc(n)

    def step(self, tokens: int) -> None:
        if tokens:
            self.h.iteration.observe(tokens)

    def first_token(self, req: SimRequest) -> None:
        assert req.first_token is not None
        self.h.ttft.observe(req.first_token - req.arrival)
        self.prompt_tokens.inc(req.prompt_tokens)
        self.prompt_local.inc(req.prompt_tokens - req.num_cached)
        self.prompt_hit.inc(req.num_cached)
        self.prompt_cached.inc(req.num_cached)
        self.cached_device.inc(req.num_cached)

    def new_tokens(self, req: SimRequest, n: int, itl: float | None) -> None:
        self.generation_tokens.inc(n)
        if itl is not None:
            self.h.itl.observe(itl)

    def finished(self, req: SimRequest) -> None:
        assert req.finish is not None and req.finish_reason is not None
        self.success[req.finish_reason].inc()
        self.h.e2e.observe(req.finish - req.arrival)
        self.h.prompt.observe(req.prompt_tokens)
        self.h.generation.observe(req.generated)
        self.h.max_gen.observe(req.max_tokens if req.max_tokens is not None else req.limit)
        self.h.n.observe(int(req.params.get("n") or 1))
        if req.max_tokens is not None:
            self.h.max_tokens.observe(req.max_tokens)
        self.h.preempt.observe(req.preemptions)
        self.h.kv_computed.observe(req.prefill_kv_computed)
        if req.scheduled is None or req.queued is None:
            return
        self.h.queue.observe(req.scheduled - req.queued)
        if req.first_token is None:
            return
        last = req.token_times[-1]
        self.h.prefill.observe(max(0.0, req.first_token - req.scheduled))
        self.h.decode.observe(last - req.first_token)
        self.h.inference.observe(max(0.0, last - req.scheduled))
        if req.generated > 1:
            self.h.tpot.observe((last - req.first_token) / (req.generated - 1))

    def exposition(self) -> bytes:
        """The text format 0.0.4 page (``GET /metrics``)."""
        return generate_latest(self.registry)
