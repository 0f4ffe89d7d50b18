"""Runbooks, one Markdown page per alert, rendered from ``templates/runbook.md.j2``.

The text lives here next to the alert names, so adding an alert without a runbook fails
:func:`render_runbooks` (and the test that regenerates the repository's ``alerts/runbooks``).
Remedies follow the MiniMax-M3 deployment guide's troubleshooting advice.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from monitor import conventions as cv
from monitor.bottleneck.rules import RULES
from monitor.errors import GenerateError
from monitor.generate import operational_rules as op
from monitor.generate import probe_rules as pr
from monitor.generate import stall_rules as st

_ROLLBACK = "If a deployment changed recently (see the *Deployment changes* annotations), roll it back."
_FAILOVER = "Fail over: move the affected request class to another pool while you investigate."
_KV = (
    "Give the KV cache more room: raise `--gpu-memory-utilization` (e.g. 0.90 -> 0.95), lower "
    "`--max-model-len` for the pool, or lower concurrency (`--max-num-seqs`)."
)


@dataclass(frozen=True)
class Runbook:
    severity: str
    meaning: str
    checks: tuple[str, ...]
    query: str
    grep: str
    actions: tuple[str, ...]
    slo_scoped: bool = False


_SLO_CHECKS = (
    "Open the *SLOs per request class* dashboard for the class and SLO in the alert labels.",
    "Compare the short and long window error ratios; find which endpoint of the pool contributes.",
    "For probe SLOs, the *Probes* dashboard shows failures by kind and reason.",
)

#: The tail alert's actions: each serving verdict's remedies, as docs/bottleneck.md states them.
_BOTTLENECK_ACTIONS = tuple(
    f"`{r.verdict}` ({r.title}): {r.remedy}; it worked when: {r.confirm}."
    for r in RULES
    if r.verdict not in op.BOTTLENECK_QUIET
)

RUNBOOKS: dict[str, Runbook] = {
    cv.ALERT_BURN_PAGE: Runbook(
        "page",
        "The SLO is burning its error budget so fast (14.4x or 6x for a 30d period) that 2-5 % of the "
        "monthly budget went in the last hour(s). Users are affected now.",
        _SLO_CHECKS,
        'm3mon:slo_error_ratio:rate1h{class="<class>",slo="<slo>"}'
        ' / (1 - m3mon:slo_objective:ratio{class="<class>",slo="<slo>"})',
        "vllm:num_requests_waiting|vllm:kv_cache_usage_perc|vllm:num_preemptions_total",
        (
            _ROLLBACK,
            _FAILOVER,
            "Latency SLO: lower concurrency (`--max-num-seqs`) or shed load. " + _KV,
            "Correctness SLO: check `--tool-call-parser minimax_m3 --reasoning-parser minimax_m3 "
            "--enable-auto-tool-choice` are set.",
            "Stall SLO (streams stalled mid-response): answers pause for longer than the threshold "
            "between two chunks. If the pause never ends, the engine is hung (`VLLMEngineStalled`): "
            "restart it. If it ends, look for preemptions and long prefills that block decode "
            "(`--max-num-batched-tokens`).",
        ),
        slo_scoped=True,
    ),
    cv.ALERT_BURN_TICKET: Runbook(
        "ticket",
        "The SLO burns its budget steadily (3x or 1x for a 30d period): 10 % of the budget went in a "
        "day or three. Not urgent, but the budget will run out before the period ends.",
        _SLO_CHECKS,
        'm3mon:slo_error_ratio:rate1d{class="<class>",slo="<slo>"}'
        ' / (1 - m3mon:slo_objective:ratio{class="<class>",slo="<slo>"})',
        "vllm:request_success_total|vllm:time_to_first_token_seconds_count",
        (
            "Find the slow trend (traffic growth, longer prompts, lower prefix-cache hit rate).",
            _KV,
            "Plan capacity: another replica or a dedicated pool for the class.",
        ),
        slo_scoped=True,
    ),
    cv.ALERT_BUDGET_EXHAUSTED: Runbook(
        "ticket",
        "The SLO has no error budget left over its period.",
        _SLO_CHECKS,
        'm3mon:slo_error_budget_remaining:ratio{class="<class>",slo="<slo>"}',
        "vllm:request_success_total",
        (
            "Freeze risky deployments for the pool until the budget recovers.",
            "Write up the incidents that consumed the budget (the weekly report lists them).",
        ),
        slo_scoped=True,
    ),
    cv.ALERT_EXHAUSTION_SOON: Runbook(
        "ticket",
        "At the burn of both the last hour and the last day, the SLO spends what is left of its period's "
        "error budget sooner than its `exhaustion_within` limit: not an outage yet, but the budget will not "
        "last the period.",
        (*_SLO_CHECKS, "`m3mon slo status` prints the projection per window."),
        'm3mon:slo_time_to_exhaustion:seconds{class="<class>",slo="<slo>"}',
        "vllm:num_requests_waiting|vllm:num_preemptions_total|vllm:request_success_total",
        (
            "Find what started the burn (a deploy, a traffic shift) and undo it before the budget is gone.",
            "Hold risky deployments to the class (`m3mon budget gate` in the release pipeline).",
        ),
        slo_scoped=True,
    ),
    cv.ALERT_METRIC_ABSENT: Runbook(
        "ticket",
        "The metric the SLO is computed from has no samples: the SLO is blind and cannot alert.",
        (
            '`up{job="vllm"}` and `up{job="m3mon"}` - is the target scraped at all?',
            "Probe SLOs: is `m3mon run` running and probing this class? Server SLOs: do the pool's "
            "endpoints expose the histogram (not started with `--disable-log-stats`)?",
        ),
        "up",
        "vllm:time_to_first_token_seconds_count|m3mon_probe_total",
        (
            "Restart the monitor or fix the scrape target.",
            "Remove `--disable-log-stats` from the vLLM flags.",
        ),
        slo_scoped=True,
    ),
    cv.ALERT_THRESHOLD_NOT_EDGE: Runbook(
        "ticket",
        "A server-side latency SLO counts requests at or under its threshold from the bucket whose "
        "`le` equals the threshold, but this endpoint's histogram has no such edge (vLLM "
        "`--custom-histogram-buckets`, or another vLLM version). The endpoint gives the SLO no data "
        "(it is never read as every request slow); the SLO is blind for it.",
        (
            "`m3mon check-config monitor.yaml --metrics <endpoint>=http://<pool>:8000/metrics` lists "
            "the endpoint's edges next to the threshold.",
            "Did the pool's vLLM version or flags change (see the *Deployment changes* annotations)?",
        ),
        '<histogram>_bucket{endpoint="<endpoint>"}',
        "--custom-histogram-buckets",
        (
            "Move the SLO's threshold onto one of the served edges, or add the threshold to the "
            "pool's `--custom-histogram-buckets`.",
        ),
        slo_scoped=True,
    ),
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
            _FAILOVER,
            "If it crashes at startup with out-of-memory: lower `--max-model-len` or raise "
            "`--gpu-memory-utilization`; check all 8 GPUs are visible (`--tensor-parallel-size 8`).",
            _ROLLBACK,
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
            _FAILOVER,
            "Restart the engine: a hung engine core does not recover by itself, and /health will not "
            "take it out of the load balancer. Keep the log of the hang for the upstream report.",
            _ROLLBACK,
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
            _ROLLBACK,
            _FAILOVER,
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
        (_KV, "Check `--block-size 128` (see `vllm:cache_config_info`).", _FAILOVER),
    ),
    cv.ALERT_QUEUE_GROWING: Runbook(
        "ticket",
        "More requests wait than the engine admits and the queue keeps growing: demand exceeds capacity.",
        ("Fleet overview: running vs waiting, token throughput.",),
        'deriv(vllm:num_requests_waiting{job="vllm"}[10m])',
        "vllm:num_requests_waiting|vllm:num_requests_running",
        ("Shed or redirect load; " + _FAILOVER, _KV, "Add a replica for the pool."),
    ),
    cv.ALERT_PREEMPTIONS: Runbook(
        "ticket",
        "The engine keeps preempting running requests because the KV cache runs out.",
        ("KV cache dashboard: preemptions per second next to KV usage.",),
        'rate(vllm:num_preemptions_total{job="vllm"}[5m])',
        "vllm:num_preemptions_total|vllm:kv_cache_usage_perc",
        (_KV, "Lower concurrency: reduce `--max-num-seqs`."),
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
            _ROLLBACK,
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
            _ROLLBACK,
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
        ("Restart the server with `--block-size 128`.", _ROLLBACK),
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
            "Queue time up: " + _KV,
            "Prefill up: prompts got longer or the prefix cache stopped hitting.",
            _ROLLBACK,
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


def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("monitor.generate", "templates"),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    return env.get_template("runbook.md.j2")


def _books() -> dict[str, Runbook]:
    from monitor.generate.fleet_runbooks import FLEET_RUNBOOKS
    from monitor.generate.maintenance_rules import MAINTENANCE_RUNBOOKS
    from monitor.generate.self_runbooks import SELF_RUNBOOKS  # imports Runbook from here
    from monitor.generate.store_runbooks import STORE_RUNBOOKS

    return {**RUNBOOKS, **SELF_RUNBOOKS, **STORE_RUNBOOKS, **FLEET_RUNBOOKS, **MAINTENANCE_RUNBOOKS}


def every_runbook(banner: str) -> dict[str, str]:
    """``{AlertName: markdown}`` for every alert any configuration can generate (what ``m3mon run``
    serves under ``/runbooks/``: the same text ``m3mon generate`` writes to ``alerts/runbooks``)."""
    return render_runbooks(sorted(_books()), banner)


def render_runbooks(alert_names: list[str], banner: str) -> dict[str, str]:
    """``{AlertName: markdown}`` for every alert; a missing runbook is a :class:`GenerateError`."""
    books = _books()
    missing = sorted(set(alert_names) - books.keys())
    if missing:
        raise GenerateError(f"no runbook text for alerts: {', '.join(missing)}")
    template = _template()
    return {
        name: template.render(name=name, banner=banner, **books[name].__dict__)
        for name in sorted(set(alert_names))
    }
