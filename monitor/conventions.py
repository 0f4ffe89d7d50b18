"""Every name m3-monitor publishes or relies on, defined once.

Metric names, label names, failure categories, SLI kinds, SLO windows and the multi-window
multi-burn-rate alert table live here, so the exporter, the rule generator, the dashboards and
the report can never disagree about a name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# --- what the monitor measures --------------------------------------------------------------

PROBE_KINDS: Final = ("chat", "tool_call", "image", "long_prompt", "reasoning", "agent_session")

SLI_KINDS: Final = ("availability", "correctness", "ttft", "itl", "tpot", "e2e", "queue_time",
                    "stall", "ttft_cold", "ttft_warm", "goodput")  # fmt: skip
LATENCY_SLIS: Final = ("ttft", "itl", "tpot", "e2e", "queue_time", "stall", "ttft_cold", "ttft_warm")
#: SLIs only the probes measure (no server-side source).
PROBE_ONLY_SLIS: Final = ("correctness", "stall", "ttft_cold", "ttft_warm", "goodput")

#: Probe failure categories: a fixed, documented set (README "Probe verdicts").
FAILURE_CATEGORIES: Final = (
    "connect_error",
    "timeout",
    "http_status",
    "stream_broken",
    "empty_output",
    "truncated",
    "degenerate_output",
    "wrong_model",
    "missing_usage",
    "malformed_tool_call",
    "parser_leak",
    "wrong_answer",
    "context_rejected",
    "monitor_error",
)
#: The monitor itself failed (a prober raised, an internal error): not the service's fault. Such a
#: probe is no event of any service SLI (docs/slo-events.md); it counts in the monitor's own metrics.
MONITOR_FAILURES: Final = frozenset({"monitor_error"})
#: The category of a probe whose prober raised (``crashed``); the one member of MONITOR_FAILURES.
REASON_MONITOR_ERROR: Final = "monitor_error"
#: Failures that mean "the service did not answer" (availability); the rest mean "answered badly".
AVAILABILITY_FAILURES: Final = frozenset(
    {"connect_error", "timeout", "http_status", "stream_broken", "context_rejected"}
)

#: Server-side availability reads vLLM's ``request_success_total`` by ``finished_reason``. A request
#: that finished with ``error`` is bad. One that finished with ``abort`` is not a valid event at
#: all (neither good nor bad): vLLM reports a user pressing Stop, a client timeout and a dropped
#: connection alike, so counting aborts as failures would page for user behaviour. Server faults
#: that abort requests still surface in the probe SLOs and in ``VLLMEndpointDown``.
#: The generated PromQL and the stored evaluations use these same two sets.
L_FINISHED_REASON: Final = "finished_reason"
FINISHED_BAD: Final = ("error",)
FINISHED_NOT_COUNTED: Final = ("abort",)

#: Reasons a scrape is rejected as a whole.
SCRAPE_ERROR_REASONS: Final = (
    "connect_error",
    "timeout",
    "http_status",
    "too_large",
    "garbled",
    "truncated",
    "empty",
)

#: Raw MiniMax parser markers that must never reach ``content``.
PARSER_MARKERS: Final = ("]<]minimax[>[", "<mm:think>", "</mm:think>")

M3_BLOCK_SIZE: Final = 128
M3_MODEL_ID: Final = "MiniMaxAI/MiniMax-M3"

# --- the monitor's own metrics (exporter) ---------------------------------------------------

PROBE_TOTAL: Final = "m3mon_probe_total"
PROBE_TTFT: Final = "m3mon_probe_ttft_seconds"
PROBE_ITL: Final = "m3mon_probe_itl_seconds"
PROBE_TPOT: Final = "m3mon_probe_tpot_seconds"
PROBE_E2E: Final = "m3mon_probe_e2e_seconds"
PROBE_QUEUE: Final = "m3mon_probe_queue_seconds"
PROBE_TOOL_TURNAROUND: Final = "m3mon_probe_tool_turnaround_seconds"
PROBE_NETWORK: Final = "m3mon_probe_network_seconds"
#: Every inter-chunk gap of a probe stream, undivided (one observation per gap; docs/probes.md).
PROBE_CHUNK_GAP: Final = "m3mon_probe_chunk_gap_seconds"
#: The longest inter-chunk gap of each probe stream (the ``stall`` SLI's events).
PROBE_LONGEST_GAP: Final = "m3mon_probe_longest_gap_seconds"
#: Probe runs by whether they met every latency SLO of their class (the ``goodput`` SLI's events).
PROBE_GOODPUT_TOTAL: Final = "m3mon_probe_goodput_total"
L_GOOD: Final = "good"
#: Retried probe attempts by class and why (the client retry policy, docs/probes.md "Retries").
PROBE_RETRIES_TOTAL: Final = "m3mon_probe_retries_total"
#: Seconds answered probe runs spent in each latency stage, by class (docs/probes.md "Stages").
PROBE_STAGE_SECONDS_TOTAL: Final = "m3mon_probe_stage_seconds_total"
L_STAGE: Final = "stage"
#: The latency stages of a request, in the order a request meets them (report breakdown, tail
#: attribution, ``stage`` label values): retries before the final attempt, network and proxy, the
#: API server's preprocessing (chat template, tokenizer, images), queue, prefill, decode, tools.
STAGES: Final = ("retry", "network", "tokenization", "queue", "prefill", "decode", "tool_turnaround")
#: ``reason`` label values of PROBE_RETRIES_TOTAL: the status class of a retried answer
#: (``http_4xx``: another client error the server marked ``x-should-retry: true``), or no answer.
RETRY_REASONS: Final = ("http_408", "http_409", "http_429", "http_5xx", "http_4xx", "connection", "timeout")

SCRAPE_SUCCESS: Final = "m3mon_scrape_success"
SCRAPE_DURATION: Final = "m3mon_scrape_duration_seconds"
SCRAPE_ERRORS: Final = "m3mon_scrape_errors_total"
#: 1 when a family the endpoint's rules, SLOs or dashboards read is on its page, else 0, with why
#: (monitor.scrape.drift: status served/flag/renamed/removed/absent/label) and the name that
#: replaced it or that it replaced (``replacement``; empty when none).
METRIC_FAMILY_SERVED: Final = "m3mon_metric_family_served"
L_FAMILY: Final = "family"
L_STATUS: Final = "status"
L_REPLACEMENT: Final = "replacement"
#: The bad requests behind a burning SLO (the failed and slowest of the last 15 min, up to 3, with
#: their trace ids and stages; value = rank): the burn notifications quote them.
SLO_REQUEST_INFO: Final = "m3mon_slo_request_info"
L_RANK: Final = "rank"
L_TRACE_ID: Final = "trace_id"
L_OUTCOME: Final = "outcome"
L_STAGES: Final = "stages"
L_LINK: Final = "link"
#: How long the metric-family alert remembers that a family was served.
METRIC_FAMILY_MEMORY: Final = "6h"
DEPLOYMENT_INFO: Final = "m3mon_deployment_info"
HEALTH_UP: Final = "m3mon_endpoint_health_up"
#: GPU telemetry read from each endpoint's GPU exporter (dcgm-exporter / AMD DME), labels endpoint+gpu.
GPU_SCRAPE_SUCCESS: Final = "m3mon_gpu_scrape_success"
GPU_UTILIZATION: Final = "m3mon_gpu_utilization_ratio"
GPU_SM_ACTIVE: Final = "m3mon_gpu_sm_active_ratio"
GPU_TENSOR_ACTIVE: Final = "m3mon_gpu_tensor_active_ratio"
GPU_MEMORY_USED: Final = "m3mon_gpu_memory_used_bytes"
GPU_MEMORY_FREE: Final = "m3mon_gpu_memory_free_bytes"
GPU_POWER: Final = "m3mon_gpu_power_watts"
GPU_XID: Final = "m3mon_gpu_last_xid"
GPU_INTERCONNECT: Final = "m3mon_gpu_interconnect_bytes_per_second"
L_GPU: Final = "gpu"
#: Prometheus job of the GPU exporters (dcgm-exporter / AMD DME) beside each endpoint (docs/generate.md).
JOB_GPU: Final = "gpu-exporter"
#: KV-cache thrash from vLLM's kv_block_* histograms (docs/collector.md "KV residency"), label endpoint.
KV_EVICTION_BEFORE_REUSE: Final = "m3mon_kv_eviction_before_reuse_ratio"
#: Each class's bottleneck verdict over the last window (docs/bottleneck.md): a state set, 1 for the
#: verdict that holds and 0 for the others (labels class, verdict; values monitor.bottleneck.rules).
BOTTLENECK_VERDICT: Final = "m3mon_bottleneck_verdict"
#: Each cause the verdict names (the verdict's own first), with its seconds in the tail: 0 for a
#: cause whose cost is refusals or a queue growing (labels class, verdict, source).
BOTTLENECK_CAUSE_SECONDS: Final = "m3mon_bottleneck_cause_seconds"
#: The evidence a cause came from (monitor.bottleneck.evidence: probes, real-traffic spans, ...).
L_SOURCE: Final = "source"
L_VERDICT: Final = "verdict"
#: The stage shares of each class's probe requests at or above P95 (``quantile="p95"``), at or
#: above P99 (``"p99"``, with 100 requests in the window) and at or below P50 (``"p50"``) of TTFT
#: and e2e over the verdict's window (labels class, latency, quantile, stage; ``stage`` also
#: ``other``: what no stage explains).
TAIL_STAGE_SHARE: Final = "m3mon_tail_stage_share_ratio"
L_LATENCY: Final = "latency"
L_QUANTILE: Final = "quantile"

SLO_ATTAINMENT: Final = "m3mon_slo_attainment_ratio"
SLO_BUDGET_REMAINING: Final = "m3mon_slo_error_budget_remaining_ratio"
SLO_BURN_RATE: Final = "m3mon_slo_burn_rate"
SLO_OBJECTIVE: Final = "m3mon_slo_objective_ratio"
STORE_BACKLOG: Final = "m3mon_store_backlog_items"
STORE_WRITE_ERRORS: Final = "m3mon_store_write_errors_total"
#: Scrape readings this replica wrote, by ``result`` (READING_RESULTS, monitor.store.readings).
STORE_READINGS: Final = "m3mon_store_readings_total"
READING_RESULTS: Final = ("new", "duplicate", "late")
#: Intervals between two stored readings too long to count (over SCRAPE_GAP_LIMIT).
STORE_SCRAPE_GAPS: Final = "m3mon_store_scrape_gaps_total"
#: Scheduled job runs by ``task`` (the scheduler's job id: ``evaluate``, ``probe:<class>``,
#: ``scrape:<endpoint>``...) and ``result`` (JOB_RESULTS). The label is ``task``, not ``job``:
#: Prometheus' target label ``job`` would rename a ``job`` label to ``exported_job``.
JOB_RUNS: Final = "m3mon_job_runs_total"
#: Unix time of a task's last successful run (0 until its first success in this process).
JOB_LAST_SUCCESS: Final = "m3mon_job_last_success_timestamp_seconds"
#: How late, in seconds, a task's last run started after its scheduled time: a CPU-starved or
#: throttled monitor shows here first (and its client-side probe timings are inflated too).
JOB_START_DELAY: Final = "m3mon_job_start_delay_seconds"
#: CPU seconds the process spent on each ``kind`` of work (JOB_KINDS, monitor.service.cpu): the
#: event-loop steps of a kind's tasks plus its worker-thread calls; the rest of
#: ``process_cpu_seconds_total`` is the event loop itself, the HTTP surface and the collectors.
JOB_CPU: Final = "m3mon_job_cpu_seconds_total"
JOB_KINDS: Final = ("scrape", "health", "probe", "write", "evaluate", "assess", "prune", "report")
#: How late the service's event loop ran a tick scheduled every EVENT_LOOP_TICK seconds: while the
#: loop is held (CPU starvation, a blocking call) no probe, scrape, timeout or exporter request runs.
EVENT_LOOP_LAG: Final = "m3mon_event_loop_lag_seconds"
EVENT_LOOP_TICK: Final = 0.5
EVENT_LOOP_LAG_BUCKETS: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Requests refused before anything was stored, by ``receiver`` and ``reason``.
RECEIVER_REJECTED: Final = "m3mon_receiver_rejected_total"
#: Configuration reloads (SIGHUP, POST /-/reload) by ``result`` (success | failure).
CONFIG_RELOADS: Final = "m3mon_config_reloads_total"
#: Warnings and errors the service logged or held back as repeats, by ``logger`` and ``kind`` (the
#: call site's kind, else its function; never the message), and those held back (monitor.service.repeats).
LOG_WARNINGS: Final = "m3mon_log_warnings_total"
LOG_WARNINGS_SUPPRESSED: Final = "m3mon_log_warnings_suppressed_total"
L_LOGGER: Final = "logger"
#: prometheus_client's ProcessCollector: when the process started (Unix time).
PROCESS_START_TIME: Final = "process_start_time_seconds"
L_TASK: Final = "task"
L_RECEIVER: Final = "receiver"
#: ``missed``: the run could not start, the task's earlier runs still held every slot it allows.
JOB_RESULTS: Final = ("success", "failure", "skipped", "missed")
TASK_EVALUATE: Final = "evaluate"
#: The bottleneck verdict of every class, from the store (docs/bottleneck.md).
TASK_ASSESS: Final = "assess"
#: Receivers that take data from other systems (the exporter's own paths count as ``exporter``).
RECEIVER_ALERTMANAGER: Final = "alertmanager"
RECEIVER_OTLP: Final = "otlp"
RECEIVERS: Final = (RECEIVER_ALERTMANAGER, RECEIVER_OTLP)
REJECT_REASONS: Final = ("unauthorized", "too_large", "too_slow", "invalid", "unsupported")


def probe_task(request_class: str) -> str:
    """The scheduler's job id (and ``task`` label) of a request class's probe rounds."""
    return f"probe:{request_class}"


def confirm_task(request_class: str) -> str:
    """The ``task`` label of a request class's confirmation rounds (monitor.probes.confirm): apart
    from its probe rounds, so ``probe:<class>`` counts the configured rounds only; kind ``probe``."""
    return f"{probe_task(request_class)}:confirm"


#: Why a probe ran (``ProbeResult.purpose``, stored in ``probe_results.extra``). ``sli``: a
#: scheduled round, an SLI event of its class's probe SLOs. ``confirm``: a confirmation round
#: (monitor.probes.confirm), evidence for the bottleneck verdict only, never an SLI event: it runs
#: when the server refuses work, so counting it would oversample exactly the bad minutes.
PURPOSE_SLI: Final = "sli"
PURPOSE_CONFIRM: Final = "confirm"
PURPOSES: Final = (PURPOSE_SLI, PURPOSE_CONFIRM)
#: Key of ``probe_results.extra`` holding the run's purpose (absent on rows stored before it: ``sli``).
PURPOSE_KEY: Final = "purpose"


#: Store ops that failed for a reason of their own (not an unreachable database), written to the
#: dead-letter file in ``storage.buffer_dir`` instead of the database; by ``reason``.
STORE_DEAD_LETTERS: Final = "m3mon_store_dead_letters_total"
#: ``reason`` values of STORE_DEAD_LETTERS (monitor.store.failures): a value that does not fit its
#: column, a violated constraint, a malformed op, anything else.
DEAD_LETTER_REASONS: Final = ("data_error", "integrity_error", "invalid_op", "other")

# --- labels ---------------------------------------------------------------------------------

L_ENDPOINT: Final = "endpoint"
L_CLASS: Final = "class"
L_KIND: Final = "kind"
L_RESULT: Final = "result"
L_REASON: Final = "reason"
L_SLO: Final = "slo"
L_SLI: Final = "sli"
L_WINDOW: Final = "window"
L_MODEL: Final = "model_name"

PROBE_LABELS: Final = (L_ENDPOINT, L_CLASS, L_KIND)
PROBE_TOTAL_LABELS: Final = (L_ENDPOINT, L_CLASS, L_KIND, L_RESULT, L_REASON)
PROBE_GOODPUT_LABELS: Final = (L_ENDPOINT, L_CLASS, L_KIND, L_REASON, L_GOOD)
RESULT_SUCCESS: Final = "success"
RESULT_FAILURE: Final = "failure"
#: ``reason`` label value of successful probes (failures carry a FAILURE_CATEGORIES value).
REASON_NONE: Final = "none"

#: Latency buckets of the probe histograms before the config's SLO thresholds are merged in.
PROBE_LATENCY_BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0,
    5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip

# --- SLO windows and burn-rate alerts (SRE Workbook ch. 5, as Sloth generates them) --------

#: Rolling windows evaluated and recorded, shortest first; the SLO period is added per SLO.
ROLLING_WINDOWS: Final = (("5m", 300), ("30m", 1800), ("1h", 3600), ("2h", 7200), ("6h", 21600),
                          ("1d", 86400), ("3d", 259200))  # fmt: skip
CALENDAR_WINDOWS: Final = ("week", "month")


@dataclass(frozen=True)
class BurnAlert:
    """One multi-window burn-rate condition: ``budget_share`` of the budget spent in ``long_window``."""

    severity: str  # "page" or "ticket"
    long_window: str
    short_window: str
    budget_share: float

    def factor(self, period_seconds: float) -> float:
        """Burn-rate factor: budget share × period / long window (14.4 for 2 % in 1h of 30d)."""
        return self.budget_share * period_seconds / window_seconds(self.long_window)


BURN_ALERTS: Final = (
    BurnAlert("page", "1h", "5m", 0.02),
    BurnAlert("page", "6h", "30m", 0.05),
    BurnAlert("ticket", "1d", "2h", 0.10),
    BurnAlert("ticket", "3d", "6h", 0.10),
)


def window_seconds(window: str) -> int:
    """Seconds of a Prometheus-style window such as ``5m``, ``6h``, ``30d``."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    return int(window[:-1]) * units[window[-1]]


def period_window(period_seconds: float) -> str:
    """The SLO period as a Prometheus window (``30d``)."""
    return f"{round(period_seconds / 86400)}d"


# --- generated rule names ---------------------------------------------------------------------


def sli_error_ratio_record(window: str) -> str:
    """Recording rule holding an SLO's error ratio over ``window`` (only RECORDED_WINDOWS and the
    period have one; :func:`monitor.generate.windows.ratio` gives any window's ratio)."""
    return f"m3mon:slo_error_ratio:rate{window}"


#: Rolling windows whose error ratio is a recording rule: those the time to exhaustion reads (1h,
#: 1d) and the long ones a dashboard could not sum on demand cheaply. The burn alerts sum the step
#: records themselves; the other windows' ratios are summed on demand from the step records
#: (:mod:`monitor.generate.windows`), at most 120 one-minute steps each.
RECORDED_WINDOWS: Final = ("1h", "6h", "1d", "3d")


def slo_step_events_record(kind: str) -> str:
    """Recording rule holding an SLO's ``kind`` (``valid``/``bad``) events of one rule step: the
    counters' rise since the previous step's reading, of endpoints whose step overlapped no
    maintenance occurrence."""
    return f"m3mon:slo_events_{kind}:step"


def slo_cumulative_events_record(kind: str) -> str:
    """Recording rule holding, per target and endpoint, the cumulative ``kind`` events the SLO's
    counters show at a rule step: the next step's rise is measured from it."""
    return f"m3mon:slo_events_{kind}:cumulative"


def probe_runs_record(kind: str, *, failed: bool) -> str:
    """Recording rule of ``VLLMHealthyButProbesFailing``'s probe runs (``failed``: failed runs):
    ``kind`` ``cumulative`` per target, endpoint and class as the counters show them; ``step`` per
    endpoint and class, what one rule step added while ``/health`` was up outside maintenance."""
    what = "probe_failures" if failed else "probe_runs"
    return f"m3mon:{what}_healthy:step" if kind == "step" else f"m3mon:{what}:cumulative"


#: The probe-runs group's first record, written at every run of the group (its value: the run's
#: instant). A probe-runs step that shows it at its own instant reads that instant's cumulative
#: records only, never the counters (:func:`monitor.generate.sli.same_instant`, ``shown``).
PROBE_RUNS_EVALUATED_RECORD: Final = "m3mon:probe_runs_evaluated:timestamp"

#: Per target and endpoint, the timestamp of the samples a rule step read: the next step's events
#: happened after it (the step's span starts there, for the maintenance overlap rule).
SLO_SAMPLED_RECORD: Final = "m3mon:slo_events_sampled:timestamp"
#: Step of the SLO rule groups: each step record holds the events of one step.
SLO_RULE_INTERVAL: Final = "1m"
#: How far back a step looks for the previous step's reading, and how long an interval between two
#: readings the store counts: events of a longer scrape gap are counted by neither engine.
SCRAPE_GAP_LIMIT: Final = "1h"
SCRAPE_GAP_LIMIT_SECONDS: Final = 3600.0
#: Steps read the previous step's records this much before their own instant, so a record of the
#: current step (whatever the order of rules, or a rule engine's write delay) is never read.
STEP_READ_OFFSET: Final = "1s"
#: Steps read the cumulative records written at their own instant over this range: it ends at the
#: instant and stays clear of the previous step (Prometheus 2 range selectors include their left
#: end, and no rule group is evaluated more often than every second).
STEP_SAME_INSTANT: Final = "500ms"

#: The SLO's one metadata record (its error budget is 1 − objective; its period is the window of
#: its period ratio record, ``m3mon:slo_error_ratio:rate30d`` or ``…rate28d``).
SLO_META_OBJECTIVE_RECORD: Final = "m3mon:slo_objective:ratio"

DO_NOT_EDIT: Final = "Generated by m3mon generate from {source}. DO NOT EDIT."

# --- names used by the generated rules and dashboards (m3mon generate) -----------------------

#: Probe TTFT of long-prompt probes, split by prefix-cache state (``cache`` = cold | warm).
PROBE_LONG_PROMPT_TTFT: Final = "m3mon_probe_long_prompt_ttft_seconds"
L_CACHE: Final = "cache"
SLO_BUDGET_REMAINING_RECORD: Final = "m3mon:slo_error_budget_remaining:ratio"
#: Label Prometheus adds to every vLLM target in the generated prometheus.yml.
L_JOB: Final = "job"

#: vLLM (V1, 0.24+) metric families the generated rules and dashboards query, as exposed.
VLLM_TTFT: Final = "vllm:time_to_first_token_seconds"
VLLM_ITL: Final = "vllm:inter_token_latency_seconds"
VLLM_TPOT: Final = "vllm:request_time_per_output_token_seconds"
VLLM_E2E: Final = "vllm:e2e_request_latency_seconds"
VLLM_QUEUE: Final = "vllm:request_queue_time_seconds"
VLLM_PREFILL: Final = "vllm:request_prefill_time_seconds"
VLLM_DECODE: Final = "vllm:request_decode_time_seconds"
VLLM_PROMPT_TOKENS_HIST: Final = "vllm:request_prompt_tokens"
VLLM_GENERATION_TOKENS_HIST: Final = "vllm:request_generation_tokens"
VLLM_MAX_GEN_TOKENS_HIST: Final = "vllm:request_max_num_generation_tokens"
VLLM_ITERATION_TOKENS: Final = "vllm:iteration_tokens_total"
VLLM_RUNNING: Final = "vllm:num_requests_running"
VLLM_WAITING: Final = "vllm:num_requests_waiting"
VLLM_KV_USAGE: Final = "vllm:kv_cache_usage_perc"
VLLM_PREFIX_QUERIES: Final = "vllm:prefix_cache_queries_total"
VLLM_PREFIX_HITS: Final = "vllm:prefix_cache_hits_total"
VLLM_PREEMPTIONS: Final = "vllm:num_preemptions_total"
VLLM_PROMPT_TOKENS: Final = "vllm:prompt_tokens_total"
VLLM_GENERATION_TOKENS: Final = "vllm:generation_tokens_total"
VLLM_REQUEST_SUCCESS: Final = "vllm:request_success_total"
VLLM_SPEC_DRAFTS: Final = "vllm:spec_decode_num_drafts_total"
VLLM_SPEC_DRAFT_TOKENS: Final = "vllm:spec_decode_num_draft_tokens_total"
VLLM_SPEC_ACCEPTED: Final = "vllm:spec_decode_num_accepted_tokens_total"
VLLM_SPEC_ACCEPTED_PER_POS: Final = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
VLLM_CACHE_CONFIG_INFO: Final = "vllm:cache_config_info"

#: The exemplar label of the probe latency histograms' observations (OpenMetrics; Grafana's default).
EXEMPLAR_TRACE_ID = "trace_id"

# --- alert names (m3mon generate; runbooks, promtool tests and the report quote them) ----------

ALERT_BURN_PAGE: Final = "SLOErrorBudgetBurnPage"
ALERT_BURN_TICKET: Final = "SLOErrorBudgetBurnTicket"
ALERT_BUDGET_EXHAUSTED: Final = "SLOErrorBudgetExhausted"
#: Time to exhaustion below the SLO's ``exhaustion_within`` (monitor/generate/exhaustion.py).
ALERT_EXHAUSTION_SOON: Final = "SLOErrorBudgetExhaustionSoon"
ALERT_METRIC_ABSENT: Final = "SLOMetricAbsent"
#: Informational (severity info): a maintenance window holds; inhibits the SLO and endpoint alerts.
ALERT_MAINTENANCE: Final = "M3MonMaintenanceInProgress"
ALERT_THRESHOLD_NOT_EDGE: Final = "SLOThresholdNotBucketEdge"
ALERT_ENDPOINT_DOWN: Final = "VLLMEndpointDown"
#: Requests sit in the engine, it counts no token, and it still answers (monitor/generate/stall_rules.py).
ALERT_ENGINE_STALLED: Final = "VLLMEngineStalled"
ALERT_MONITOR_DOWN: Final = "M3MonMonitorDown"
ALERT_PROBES_FAILING: Final = "VLLMHealthyButProbesFailing"
ALERT_SCRAPE_FAILING: Final = "M3MonScrapeFailing"
ALERT_KV_CACHE_NEARLY_FULL: Final = "VLLMKVCacheNearlyFull"
ALERT_QUEUE_GROWING: Final = "VLLMWaitingQueueGrowing"
ALERT_PREEMPTIONS: Final = "VLLMPreemptions"
ALERT_PREFIX_HIT_RATE_COLLAPSED: Final = "VLLMPrefixCacheHitRateCollapsed"
ALERT_SPEC_ACCEPTANCE_DROPPED: Final = "VLLMSpecDecodeAcceptanceDropped"
ALERT_BLOCK_SIZE_NOT_128: Final = "VLLMBlockSizeNot128"
ALERT_TTFT_P99_REGRESSION: Final = "VLLMTTFTP99Regression"
ALERT_PROBER_ERRORS: Final = "M3MonProberErrors"
ALERT_STORE_DEAD_LETTERS: Final = "M3MonStoreDeadLetters"
ALERT_STORE_SPOOL_GROWING: Final = "M3MonStoreSpoolGrowing"
ALERT_EVALUATION_STALE: Final = "M3MonEvaluationStale"
ALERT_PROBES_NOT_RUNNING: Final = "M3MonProbesNotRunning"
ALERT_RECEIVER_REJECTING: Final = "M3MonReceiverRejecting"
#: A family a rule, SLO or dashboard reads left an endpoint's page (monitor.scrape.drift).
ALERT_METRIC_FAMILY_GONE: Final = "M3MonMetricFamilyGone"
ALERT_EVENT_LOOP_BLOCKED: Final = "M3MonEventLoopBlocked"
#: A class's latency SLO burns while a serving bottleneck owns its tail (docs/bottleneck.md).
ALERT_TAIL_BOTTLENECK: Final = "M3MonTailBottleneck"
ALERT_ROUTING_LEAK: Final = "VLLMRoutingLeak"
SLO_ALERT_NAMES: Final = (
    ALERT_BURN_PAGE,
    ALERT_BURN_TICKET,
    ALERT_BUDGET_EXHAUSTED,
    ALERT_EXHAUSTION_SOON,
    ALERT_METRIC_ABSENT,
    ALERT_THRESHOLD_NOT_EDGE,
)
#: Informational alerts (severity info): routed only to the monitor's receiver.
INFO_ALERT_NAMES: Final = (ALERT_MAINTENANCE,)
OPERATIONAL_ALERT_NAMES: Final = (
    ALERT_ROUTING_LEAK,
    ALERT_ENDPOINT_DOWN,
    ALERT_ENGINE_STALLED,
    ALERT_MONITOR_DOWN,
    ALERT_PROBES_FAILING,
    ALERT_SCRAPE_FAILING,
    ALERT_KV_CACHE_NEARLY_FULL,
    ALERT_QUEUE_GROWING,
    ALERT_PREEMPTIONS,
    ALERT_PREFIX_HIT_RATE_COLLAPSED,
    ALERT_SPEC_ACCEPTANCE_DROPPED,
    ALERT_BLOCK_SIZE_NOT_128,
    ALERT_TTFT_P99_REGRESSION,
    ALERT_PROBER_ERRORS,
    ALERT_STORE_DEAD_LETTERS,
    ALERT_STORE_SPOOL_GROWING,
    ALERT_EVALUATION_STALE,
    ALERT_PROBES_NOT_RUNNING,
    ALERT_RECEIVER_REJECTING,
    ALERT_METRIC_FAMILY_GONE,
    ALERT_EVENT_LOOP_BLOCKED,
    ALERT_TAIL_BOTTLENECK,
)

# --- OTLP trace receiver (m3mon run, POST /v1/traces) ----------------------------------------

#: Spans received on ``/v1/traces`` by ``result``: stored (``llm_request`` and GenAI-convention
#: spans), ignored (any other span, e.g. the probes' own CLIENT spans), rejected (a malformed body;
#: counts the request).
OTLP_SPANS_RECEIVED: Final = "m3mon_otlp_spans_received_total"
OTLP_STORED: Final = "stored"
OTLP_IGNORED: Final = "ignored"
OTLP_REJECTED: Final = "rejected"

#: Real requests (server spans in no probe's trace) judged against their class's goodput limits
#: (the ``goodput`` SLI with ``source: traffic``; docs/slo-events.md, "Goodput of real traffic").
TRAFFIC_TOTAL: Final = "m3mon_traffic_requests_total"
L_TENANT: Final = "tenant"
L_PRIORITY: Final = "priority"
#: On every record and alert of an SLO declared per tenant or priority band, beside its tenant
#: (L_TENANT) and band (L_PRIORITY): the name it was declared under (``goodput`` of
#: ``goodput.acme``), so a dashboard selects one declaration's tenants (docs/generate.md "Tenants").
L_DECLARED_SLO: Final = "declared_slo"
TRAFFIC_LABELS: Final = (L_ENDPOINT, L_CLASS, L_TENANT, L_PRIORITY, L_GOOD)
#: Tenant label value of every tenant that has no label of its own (and of requests naming none).
TENANT_OTHER: Final = "other"
#: Real requests no class could be given, by why (they are no event of any traffic SLO).
TRAFFIC_UNROUTED: Final = "m3mon_traffic_unrouted_total"
#: Requests whose tenant was folded into ``other``; distinct tenant ids folded (counted up to
#: TENANTS_FOLDED_COUNTED); the tenant label values in use and their cap (docs/traces.md "Tenants").
TRAFFIC_FOLDED_REQUESTS: Final = "m3mon_traffic_folded_requests_total"
TRAFFIC_TENANTS_FOLDED: Final = "m3mon_traffic_tenants_folded"
TRAFFIC_TENANT_LABELS: Final = "m3mon_traffic_tenant_labels"
TRAFFIC_TENANT_CAP: Final = "m3mon_traffic_tenant_cap"
TENANTS_FOLDED_COUNTED: Final = 100_000

# --- fleet mode (monitor/fleet, docs/fleet.md) -------------------------------------------------

#: 1 on the replica that holds the fleet's evaluator lock, else 0.
FLEET_EVALUATOR: Final = "m3mon_fleet_evaluator"
#: 1 per endpoint this replica's shard owns (labels endpoint, shard): a dead shard's endpoints go absent.
FLEET_ENDPOINT_OWNED: Final = "m3mon_fleet_endpoint_owned"
#: Probe slots this replica claimed or found claimed by its pair partner (label result).
FLEET_PROBE_CLAIMS: Final = "m3mon_fleet_probe_claims_total"
L_SHARD: Final = "shard"
L_REPLICA: Final = "replica"
ALERT_ENDPOINT_UNMONITORED: Final = "M3MonEndpointUnmonitored"
ALERT_NO_EVALUATOR: Final = "M3MonNoEvaluator"
#: Fleet: one replica of a shard is down while its partner is up (ticket; a whole shard pages).
ALERT_REPLICA_DOWN: Final = "M3MonReplicaDown"


def vllm_scrape_job(job: str, interval: str, single: bool) -> str:
    """Scrape config name of the vLLM endpoints scraped every ``interval`` (e.g. ``30s``).

    With one distinct interval it is ``job`` itself; otherwise ``<job>-<interval>``, and every
    one of them relabels its targets' ``job`` label back to ``job`` (the rules select by it).
    """
    return job if single else f"{job}-{interval}"


# --- time to exhaustion and the deploy gate (monitor/slo/exhaustion.py, monitor/slo/policy.py) -

#: Projected seconds until the period's error budget is spent at the burn of ``window`` (+Inf: no burn).
SLO_TIME_TO_EXHAUSTION: Final = "m3mon_slo_time_to_exhaustion_seconds"
#: Per maintenance window, class and endpoint: its current occurrence, else its next one, as
#: ``(start, end]`` in Unix seconds. The rules read "in maintenance" as start < time() <= end.
MAINTENANCE_START: Final = "m3mon_maintenance_start_timestamp_seconds"
MAINTENANCE_END: Final = "m3mon_maintenance_end_timestamp_seconds"
#: The occurrence that ended last, while it ended within SCRAPE_GAP_LIMIT: a rule step whose span
#: (its samples' times) overlaps it is excluded, so events of the end's last interval stay out.
MAINTENANCE_PREVIOUS_START: Final = "m3mon_maintenance_previous_start_timestamp_seconds"
MAINTENANCE_PREVIOUS_END: Final = "m3mon_maintenance_previous_end_timestamp_seconds"
#: The rules read the boundary gauges through ``last_over_time(...[MAINTENANCE_MEMORY])``: a failed
#: scrape of the monitor, or a monitor restart, shorter than this does not end a maintenance for
#: the rules (an instant read saw no maintenance from the first failed scrape on). The price: a
#: window removed from the config still excludes for up to this long in the rules.
MAINTENANCE_MEMORY: Final = "10m"
MAINTENANCE_LABELS: Final = ("maintenance", "class", "endpoint", "whole_class", "whole_endpoint")
L_MAINTENANCE: Final = "maintenance"
#: "true" when the window covers the class on every endpoint serving it (burn alerts are inhibited).
L_WHOLE_CLASS: Final = "whole_class"
#: "true" when the window covers every class the endpoint serves (endpoint alerts are inhibited).
L_WHOLE_ENDPOINT: Final = "whole_endpoint"
SLO_EXHAUSTION_RECORD: Final = "m3mon:slo_time_to_exhaustion:seconds"
#: The (short, long) windows whose burn rates are projected; the alert needs both below its limit.
EXHAUSTION_WINDOWS: Final = ("1h", "1d")
