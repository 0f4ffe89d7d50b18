"""Runbook texts of the alerts about the serving engine and the probes' view of it: endpoint down,
stalled engine, KV cache, queue, preemptions, prefix cache, speculative decoding, routing leak,
block size, the tail's bottleneck, TTFT regression, prober errors (rendered by
:mod:`monitor.generate.runbooks`). Remedies follow the MiniMax-M3 deployment guide's advice."""

from __future__ import annotations

from monitor import conventions as cv
from monitor.bottleneck.rules import RULES
from monitor.generate import operational_rules as op
from monitor.generate import probe_rules as pr
from monitor.generate import stall_rules as st
from monitor.generate.runbooks import FAILOVER, KV, ROLLBACK, Runbook

ENGINE_RUNBOOKS: dict[str, Runbook] = {
    cv.ALERT_ENDPOINT_DOWN: Runbook(
        "page",
        "Prometheus cannot scrape the vLLM endpoint: the server or its host is down or unreachable.",
        (
            "`docker compose ps` / the process list on the host.",
            "Logs for CUDA OOM or NCCL errors at startup.",
        ),
        'up{job="vllm"}',
        "vllm:num_requests_running",
        (
            FAILOVER,
            "If it crashes at startup with out-of-memory: lower `--max-model-len` or raise "
            "`--gpu-memory-utilization`; check all 8 GPUs are visible (`--tensor-parallel-size 8`).",
            ROLLBACK,
        ),
    ),
    cv.ALERT_ENGINE_STALLED: Runbook(
        "page",
        "Requests have been running or waiting on the endpoint for two scrape intervals plus "
        f"{st.STALL_GRACE} s while the engine counted no prompt or generation token and its KV-cache "
        "usage did not rise, and its /metrics (and /health) still answer: the engine is hung behind a "
        "passing health check (vllm-project/vllm#39863). Streams stop mid-response, new requests queue, "
        "clients time out. An idle engine, a failed or paused scrape and a slow engine that still counts "
        "tokens never fire it.",
        (
            "Engine dashboard: running and waiting flat or rising, token throughput at 0.",
            "The engine's log around the last counted token: NCCL timeouts, a worker process that "
            "died (`EngineCore` / `Worker` exited), CUDA errors, a hung custom all-reduce.",
            "`nvidia-smi`: GPUs at 0 % utilisation (a hang) or pinned at 100 % (a spinning kernel).",
        ),
        'sum by (endpoint) (increase(vllm:generation_tokens_total{job="vllm"}[1m]))'
        ' and on (endpoint) sum by (endpoint) (vllm:num_requests_running{job="vllm"}'
        ' + vllm:num_requests_waiting{job="vllm"}) > 0',
        "vllm:generation_tokens_total|vllm:prompt_tokens_total|vllm:num_requests_running|"
        "vllm:num_requests_waiting",
        (
            FAILOVER,
            "Restart the engine: a hung engine core does not recover by itself, and /health will not "
            "take it out of the load balancer. Keep the log of the hang for the upstream report.",
            ROLLBACK,
        ),
    ),
    cv.ALERT_MONITOR_DOWN: Runbook(
        "page",
        "Prometheus cannot scrape the monitor's exporter; no probe SLO can be evaluated. In a fleet "
        "(alerts/fleet) it means every replica of shard `shard` is down; one replica of a pair is "
        "M3MonReplicaDown (ticket).",
        ("`curl http://<exporter>/metrics` on the monitor host.", "The monitor's logs."),
        'up{job="m3mon"}',
        "m3mon_probe_total",
        ("Restart `m3mon run -c monitor.yaml`.", "Check the exporter listen address in the config."),
    ),
    cv.ALERT_PROBES_FAILING: Runbook(
        "page",
        f"`/health` returns 200, yet more than {pr.PROBE_FAILURE_RATIO:.0%} of the endpoint's synthetic "
        f"probes (and at least {pr.PROBE_FAILURES_MIN}) failed over the last {pr.PROBE_WINDOW} "
        f"({pr.PROBE_SPARSE_WINDOW} for an endpoint probed less than {pr.PROBE_SPARSE_BELOW} times in "
        f"{pr.PROBE_WINDOW}): the server runs but gives wrong or no answers. Only probes that ran while "
        "`/health` was up and outside maintenance count; `monitor_error` runs (the monitor's own bugs) "
        "do not count either; they raise M3MonProberErrors.",
        (
            "Probes dashboard: which kinds and reasons fail (parser_leak, malformed_tool_call, timeout ...).",
            "Send one chat completion by hand with `curl` and read the raw answer.",
        ),
        "sum by (endpoint, kind, reason) (increase(m3mon_probe_total"
        f'{{result="failure",reason!="monitor_error"}}[{pr.PROBE_WINDOW}]))',
        "vllm:request_success_total",
        (
            "parser_leak / malformed_tool_call: the server needs `--tool-call-parser minimax_m3 "
            "--reasoning-parser minimax_m3 --enable-auto-tool-choice`.",
            "timeout / stream_broken: the engine is stuck; restart it.",
            ROLLBACK,
            FAILOVER,
        ),
    ),
    cv.ALERT_SCRAPE_FAILING: Runbook(
        "ticket",
        "The monitor's own scrape of the endpoint's /metrics fails (see `m3mon_scrape_errors_total` reason).",
        ("`m3mon_scrape_errors_total` by reason.", "`curl -s http://<endpoint>/metrics | head`."),
        "sum by (endpoint, reason) (rate(m3mon_scrape_errors_total[10m]))",
        "# TYPE vllm",
        (
            "Fix network reachability or the API key env var.",
            "too_large / garbled: check the server version and a proxy in front of it.",
        ),
    ),
    cv.ALERT_KV_CACHE_NEARLY_FULL: Runbook(
        "ticket",
        "KV-cache usage has stayed above 90 % for 10 minutes; new requests queue, running ones get "
        "preempted.",
        ("KV cache dashboard: usage, preemptions, waiting queue.",),
        'max by (endpoint) (vllm:kv_cache_usage_perc{job="vllm"})',
        "vllm:kv_cache_usage_perc|vllm:cache_config_info",
        (KV, "Check `--block-size 128` (see `vllm:cache_config_info`).", FAILOVER),
    ),
    cv.ALERT_QUEUE_GROWING: Runbook(
        "ticket",
        "More requests wait than the engine admits and the queue keeps growing: demand exceeds capacity.",
        ("Fleet overview: running vs waiting, token throughput.",),
        'deriv(vllm:num_requests_waiting{job="vllm"}[10m])',
        "vllm:num_requests_waiting|vllm:num_requests_running",
        ("Shed or redirect load; " + FAILOVER, KV, "Add a replica for the pool."),
    ),
    cv.ALERT_PREEMPTIONS: Runbook(
        "ticket",
        "The engine keeps preempting running requests because the KV cache runs out.",
        ("KV cache dashboard: preemptions per second next to KV usage.",),
        'rate(vllm:num_preemptions_total{job="vllm"}[5m])',
        "vllm:num_preemptions_total|vllm:kv_cache_usage_perc",
        (KV, "Lower concurrency: reduce `--max-num-seqs`."),
    ),
    cv.ALERT_PREFIX_HIT_RATE_COLLAPSED: Runbook(
        "ticket",
        "The prefix-cache hit rate fell below half of yesterday's: long prompts are recomputed, TTFT rises.",
        ("KV cache dashboard: hit rate now vs one day ago.", "Did the system prompt or tool schema change?"),
        "rate(vllm:prefix_cache_hits_total[1h]) / rate(vllm:prefix_cache_queries_total[1h])",
        "vllm:prefix_cache_hits_total|vllm:prefix_cache_queries_total",
        (
            "Keep shared prompt prefixes stable across requests.",
            "Check prefix caching is enabled and `--block-size 128`.",
            ROLLBACK,
        ),
    ),
    cv.ALERT_SPEC_ACCEPTANCE_DROPPED: Runbook(
        "ticket",
        "Draft-token acceptance fell below 80 % of yesterday's: speculative decoding wastes compute.",
        ("Speculative decoding dashboard: acceptance rate and per-position acceptance.",),
        "rate(vllm:spec_decode_num_accepted_tokens_total[1h])\n"
        "  / rate(vllm:spec_decode_num_draft_tokens_total[1h])",
        "vllm:spec_decode_",
        (
            "Check the draft model matches the target checkpoint (`--speculative-config`).",
            ROLLBACK,
            "If traffic changed (e.g. more tool calls), lower `num_speculative_tokens`.",
        ),
    ),
    cv.ALERT_ROUTING_LEAK: Runbook(
        "ticket",
        "Requests whose prompt is longer than the ceiling of every class the pool serves were served "
        f"by it in the last {op.ROUTING_LEAK_WINDOW} (counted above the first 1-2-5 bucket edge of "
        "`vllm:request_prompt_tokens` at or over the ceiling: 50000 for a 32768-token ceiling). The "
        "router sent long prompts to a pool sized for short ones, and the pool's `--max-model-len` "
        "admits them: they hold KV blocks the class's warm capacity was measured without.",
        (
            "`m3mon contract -c FILE` shows each class's ceiling, the pool's max-model-len and the "
            "observed prompt+output percentiles.",
            "Find the caller: the router or gateway logs for requests to this pool with large inputs.",
        ),
        "sum by (endpoint, le) (increase(vllm:request_prompt_tokens_bucket[10m]))",
        "vllm:request_prompt_tokens",
        (
            "Fix the routing rule so prompts over the class ceiling go to the long-context pool.",
            "Set `--max-model-len` of the pool to the class ceiling, so vLLM refuses such prompts "
            "(HTTP 400) instead of serving them slowly.",
        ),
    ),
    cv.ALERT_BLOCK_SIZE_NOT_128: Runbook(
        "ticket",
        "The endpoint runs with a KV block size other than 128, which MiniMax-M3 requires.",
        ("`vllm:cache_config_info` labels on the endpoint.",),
        'vllm:cache_config_info{block_size!="128"}',
        "vllm:cache_config_info",
        ("Restart the server with `--block-size 128`.", ROLLBACK),
    ),
    cv.ALERT_TAIL_BOTTLENECK: Runbook(
        "ticket",
        f"A latency SLO of the class has burned faster than its budget (1h window) while the bottleneck "
        f"verdict named a serving cause for {op.BOTTLENECK_FOR}: one stage owns the slowest requests "
        "and it is not the model's own work at normal load. The `verdict` label says which "
        "(docs/bottleneck.md has the rules).",
        (
            '`m3mon_bottleneck_cause_seconds{class="<class>"}`: every cause the verdict names with its '
            "seconds in the tail; `m3mon slo status -c CONFIG` prints each with the evidence it read.",
            '`m3mon_tail_stage_share_ratio{class="<class>",quantile="p95"}`: the stage shares of the '
            'class\'s P95+ probe requests (TTFT and e2e); `quantile="p50"` is the typical request.',
            "GPU dashboards (`m3mon_gpu_sm_active_ratio`) beside queue time and KV-cache use of the "
            "class's endpoints: GPU saturation or a scheduler with idle GPUs?",
            "`m3mon_probe_retries_total` by reason for a retry storm; `vllm:num_preemptions_total` and "
            "`m3mon_kv_eviction_before_reuse_ratio` for cache thrash.",
        ),
        'm3mon_bottleneck_verdict{class="<class>"} == 1',
        "vllm:num_requests_waiting|vllm:num_preemptions_total|vllm:kv_cache_usage_perc",
        tuple(
            f"`{r.verdict}` ({r.title}): {r.remedy}; it worked when: {r.confirm}."
            for r in RULES
            if r.verdict not in op.BOTTLENECK_QUIET
        ),
    ),
    cv.ALERT_TTFT_P99_REGRESSION: Runbook(
        "ticket",
        f"p99 TTFT over the last {op.TTFT_WINDOW} has been more than {op.TTFT_REGRESSION:g}x the same "
        f"{op.TTFT_WINDOW} a week ago, continuously for {op.TTFT_FOR}.",
        (
            "Latency breakdown dashboard: is it queue, prefill or network?",
            "KV cache dashboard: prefix-cache hit rate.",
        ),
        "histogram_quantile(0.99, sum by (endpoint, le) (rate(vllm:time_to_first_token_seconds_bucket"
        f"[{op.TTFT_WINDOW}])))",
        "vllm:time_to_first_token_seconds",
        (
            "Queue time up: " + KV,
            "Prefill up: prompts got longer or the prefix cache stopped hitting.",
            ROLLBACK,
        ),
    ),
    cv.ALERT_PROBER_ERRORS: Runbook(
        "ticket",
        "A prober of m3mon raised an exception instead of returning a verdict: a bug in the monitor "
        "(often an answer shape it does not expect, e.g. after a vLLM upgrade), not a service failure. "
        "Such runs are `monitor_error`: they burn no SLO, so the class is probed less than configured "
        "and its SLOs see fewer events until the prober is fixed.",
        (
            "The monitor's log: the ERROR line `<kind> prober crashed on <endpoint>/<class>` has the "
            "traceback.",
            "`m3mon probe -c monitor.yaml --once --class <class> --kind <kind> --json` reproduces it "
            "(exit status 3, `crashed: true`).",
            "Did the endpoint's vLLM version or its parsers change (see the *Deployment changes* "
            "annotations)?",
        ),
        "sum by (endpoint, class, kind) "
        f'(increase(m3mon_probe_total{{reason="monitor_error"}}[{op.PROBER_ERRORS_WINDOW}]))',
        "vllm:request_success_total|vllm:num_requests_running",
        (
            "File a bug against m3-monitor with the traceback and the `--json` output of the probe.",
            "If the service changed its answer format on purpose, update the prober; until then the "
            "class's probe SLOs rest on the other kinds.",
            "The service itself needs no action for this alert; its own alerts still apply.",
        ),
    ),
}
