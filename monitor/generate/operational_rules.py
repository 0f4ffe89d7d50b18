"""Operational alerts on the serving fleet: down, saturated, misconfigured or regressing.

Each alert is per ``endpoint`` (the target label the generated prometheus.yml adds). Thresholds,
windows and ``for`` delays are module constants so the runbooks and unit tests quote the same
numbers; how fast each alert must fire is promised in :mod:`monitor.generate.detection` and
checked by replaying those scenarios in promtool (tests/generate/test_detection_operational.py).
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.probe_rules import probe_groups
from monitor.generate.rules import Alert, Group
from monitor.generate.self_rules import self_alerts
from monitor.generate.stall_rules import stall_alerts
from monitor.model import Model

KV_CACHE_HIGH = 0.9
WAITING_HIGH = 10
PROBER_ERRORS_WINDOW = "15m"  # M3MonProberErrors: any monitor_error over this window
PREFIX_HIT_COLLAPSE = 0.5  # hit rate below half of the same hour yesterday
SPEC_ACCEPT_DROP = 0.8  # acceptance below 80 % of the same hour yesterday
TTFT_REGRESSION = 1.5  # p99 TTFT 50 % above the same window last week
TTFT_WINDOW = "10m"  # p99 window; TTFT_FOR exceeds it, so a burst of slow requests shorter than
TTFT_FOR = "15m"  # TTFT_FOR - TTFT_WINDOW (5 min) never tickets
EFFICIENCY_FOR = "15m"  # prefix-cache and spec-decode drops, on 1h windows
DEAD_LETTERS_WINDOW = "15m"  # M3MonStoreDeadLetters: any store op set aside over this window
SPOOL_WINDOW = "10m"  # M3MonStoreSpoolGrowing: the backlog rose over SPOOL_WINDOW (deriv > 0) ...
SPOOL_FOR = "10m"  # ... continuously for SPOOL_FOR, so a database restart of a few minutes never tickets
#: M3MonTailBottleneck: a serving verdict (not none/insufficient_evidence) held BOTTLENECK_FOR while
#: a latency SLO of the class burns faster than its budget (1h window): the tail has an owner the
#: objectives cannot absorb, for long enough that it is no passing cause.
BOTTLENECK_FOR = "15m"
BOTTLENECK_BURN = 1.0
BOTTLENECK_QUIET = ("none", "insufficient_evidence")
ROUTING_LEAK_WINDOW = "10m"  # VLLMRoutingLeak: any request over the pool's ceiling edge in this window


def _vllm(model: Model) -> str:
    return q.matchers([(cv.L_JOB, q.eq(model.alerting.job_vllm))])


def _mon(model: Model) -> str:
    return q.monitor_selector(model.alerting)


def _ratio(num: str, den: str, sel: str, window: str, offset: str = "") -> str:
    off = f" offset {offset}" if offset else ""
    return (
        f"sum by (endpoint) (rate({num}{sel}[{window}]{off}))\n"
        f"  / sum by (endpoint) (rate({den}{sel}[{window}]{off}))"
    )


def _availability(model: Model) -> list[Alert]:
    v, m = _vllm(model), _mon(model)
    return [
        Alert(
            cv.ALERT_ENDPOINT_DOWN,
            f"up{v} == 0",
            "page",
            "vLLM endpoint {{ $labels.endpoint }} is down",
            "Prometheus cannot scrape {{ $labels.endpoint }} ({{ $labels.instance }}) for 2 minutes.",
            for_="2m",
        ),
        Alert(
            cv.ALERT_MONITOR_DOWN,
            f"up{m} == 0",
            "page",
            "The m3mon monitor is not being scraped",
            "Prometheus cannot scrape the monitor's exporter; every probe SLO is blind.",
            for_="5m",
        ),
        Alert(
            cv.ALERT_SCRAPE_FAILING,
            f"{cv.SCRAPE_SUCCESS}{m} == 0",
            "ticket",
            "m3mon cannot scrape {{ $labels.endpoint }}",
            "The monitor's own scrape of {{ $labels.endpoint }} /metrics has failed for 5 minutes.",
            for_="5m",
        ),
        _prober_errors(model),
    ]


def _prober_errors(model: Model) -> Alert:
    crashed = q.monitor_selector(model.alerting, reason=cv.REASON_MONITOR_ERROR)
    return Alert(
        cv.ALERT_PROBER_ERRORS,
        f"sum by (endpoint, class, kind) (increase({cv.PROBE_TOTAL}{crashed}[{PROBER_ERRORS_WINDOW}])) > 0",
        "ticket",
        "m3mon's {{ $labels.kind }} prober crashes on {{ $labels.endpoint }}",
        '{{ printf "%.0f" $value }} {{ $labels.kind }} probe(s) of class {{ $labels.class }} on '
        "{{ $labels.endpoint }} ended in monitor_error in the last "
        f"{PROBER_ERRORS_WINDOW}: a bug in m3mon, not the service. Those runs burn no SLO, but the class "
        "is probed less than configured.",
        for_="1m",
    )


def _saturation(model: Model) -> list[Alert]:
    v = _vllm(model)
    return [
        Alert(
            cv.ALERT_KV_CACHE_NEARLY_FULL,
            f"max by (endpoint) ({cv.VLLM_KV_USAGE}{v}) > {q.num(KV_CACHE_HIGH)}",
            "ticket",
            "KV cache on {{ $labels.endpoint }} above 90 %",
            "KV-cache usage has stayed at {{ $value | humanizePercentage }} for 10 minutes; requests "
            "will queue and be preempted.",
            for_="10m",
        ),
        Alert(
            cv.ALERT_QUEUE_GROWING,
            f"sum by (endpoint) (deriv({cv.VLLM_WAITING}{v}[10m])) > 0\nand on (endpoint)\n"
            f"sum by (endpoint) ({cv.VLLM_WAITING}{v}) > {WAITING_HIGH}",
            "ticket",
            "Waiting queue on {{ $labels.endpoint }} keeps growing",
            f"More than {WAITING_HIGH} requests are waiting and the queue is still growing.",
            for_="10m",
        ),
        Alert(
            cv.ALERT_PREEMPTIONS,
            f"sum by (endpoint) (rate({cv.VLLM_PREEMPTIONS}{v}[5m])) > 0",
            "ticket",
            "{{ $labels.endpoint }} is preempting requests",
            "The engine preempted requests continuously for 15 minutes ({{ $value }} per second): the KV "
            "cache is too small for the load.",
            for_="15m",
        ),
    ]


def _efficiency(model: Model) -> list[Alert]:
    v = _vllm(model)
    hits_now = _ratio(cv.VLLM_PREFIX_HITS, cv.VLLM_PREFIX_QUERIES, v, "1h")
    hits_then = _ratio(cv.VLLM_PREFIX_HITS, cv.VLLM_PREFIX_QUERIES, v, "1h", "1d")
    acc_now = _ratio(cv.VLLM_SPEC_ACCEPTED, cv.VLLM_SPEC_DRAFT_TOKENS, v, "1h")
    acc_then = _ratio(cv.VLLM_SPEC_ACCEPTED, cv.VLLM_SPEC_DRAFT_TOKENS, v, "1h", "1d")

    def p99(offset: str) -> str:
        return (
            f"histogram_quantile(0.99, sum by (endpoint, le) (rate({cv.VLLM_TTFT}_bucket{v}[{TTFT_WINDOW}]"
            f"{offset})))"
        )

    return [
        Alert(
            cv.ALERT_PREFIX_HIT_RATE_COLLAPSED,
            f"(\n  {hits_now}\n)\n< {q.num(PREFIX_HIT_COLLAPSE)} * (\n  {hits_then}\n)",
            "ticket",
            "Prefix-cache hit rate on {{ $labels.endpoint }} collapsed",
            "The prefix-cache hit rate over the last hour is below half of the same hour yesterday.",
            for_=EFFICIENCY_FOR,
        ),
        Alert(
            cv.ALERT_SPEC_ACCEPTANCE_DROPPED,
            f"(\n  {acc_now}\n)\n< {q.num(SPEC_ACCEPT_DROP)} * (\n  {acc_then}\n)",
            "ticket",
            "Speculative-decoding acceptance on {{ $labels.endpoint }} dropped",
            "Draft-token acceptance over the last hour is below 80 % of the same hour yesterday.",
            for_=EFFICIENCY_FOR,
        ),
        Alert(
            cv.ALERT_BLOCK_SIZE_NOT_128,
            f'count by (endpoint, block_size) ({cv.VLLM_CACHE_CONFIG_INFO}{{job="{model.alerting.job_vllm}",'
            f'block_size!="{cv.M3_BLOCK_SIZE}"}}) > 0',
            "ticket",
            "{{ $labels.endpoint }} runs with block size {{ $labels.block_size }}, not 128",
            "MiniMax-M3 must be served with --block-size 128.",
            for_="5m",
        ),
        Alert(
            cv.ALERT_TTFT_P99_REGRESSION,
            f"{p99('')}\n> {q.num(TTFT_REGRESSION)} * {p99(' offset 1w')}",
            "ticket",
            "p99 TTFT on {{ $labels.endpoint }} regressed against last week",
            f"p99 time to first token over the last {TTFT_WINDOW} is {{{{ $value | humanizeDuration }}}}, "
            f"more than {q.num(TTFT_REGRESSION)}x the same {TTFT_WINDOW} a week ago, for {TTFT_FOR}.",
            for_=TTFT_FOR,
        ),
    ]


def tail_bottleneck_expr(model: Model) -> str:
    """The class's serving verdict, while one of its latency SLOs burns on the 1h window."""
    verdict = cv.BOTTLENECK_VERDICT + q.matchers(
        [(cv.L_JOB, q.eq(model.alerting.job_monitor)), (cv.L_VERDICT, q.not_regex(BOTTLENECK_QUIET))]
    )
    burn = cv.SLO_BURN_RATE + q.matchers(
        [(cv.L_JOB, q.eq(model.alerting.job_monitor)), (cv.L_SLI, q.regex(cv.LATENCY_SLIS)),
         (cv.L_WINDOW, q.eq("1h"))]
    )  # fmt: skip
    return (
        f"max by (class, verdict) ({verdict} == 1)\n"
        f"and on (class)\nmax by (class) ({burn}) > {q.num(BOTTLENECK_BURN)}"
    )


def _tail(model: Model) -> list[Alert]:
    return [
        Alert(
            cv.ALERT_TAIL_BOTTLENECK,
            tail_bottleneck_expr(model),
            "ticket",
            "{{ $labels.class }}: the latency tail is {{ $labels.verdict }}",
            "A latency SLO of {{ $labels.class }} burns faster than its budget and the bottleneck "
            "verdict has been {{ $labels.verdict }} for " + BOTTLENECK_FOR + " (docs/bottleneck.md): "
            '`m3mon_tail_stage_share_ratio{class="{{ $labels.class }}",quantile="p95"}` shows which '
            "stage owns the tail.",
            for_=BOTTLENECK_FOR,
        )
    ]


def _store(model: Model) -> list[Alert]:
    m = _mon(model)
    return [
        Alert(
            cv.ALERT_STORE_DEAD_LETTERS,
            f"sum by (instance, reason) (increase({cv.STORE_DEAD_LETTERS}{m}[{DEAD_LETTERS_WINDOW}])) > 0",
            "ticket",
            "m3mon set store writes aside ({{ $labels.reason }})",
            '{{ printf "%.0f" $value }} store write(s) on {{ $labels.instance }} failed on their own '
            f"({{{{ $labels.reason }}}}) in the last {DEAD_LETTERS_WINDOW} and went to the dead-letter file "
            "in storage.buffer_dir instead of the database; the writes after them were stored.",
            for_="1m",
        ),
        Alert(
            cv.ALERT_STORE_SPOOL_GROWING,
            f"{cv.STORE_BACKLOG}{m} > 0\nand\nderiv({cv.STORE_BACKLOG}{m}[{SPOOL_WINDOW}]) > 0",
            "ticket",
            "m3mon cannot write to its database; the spool keeps growing",
            '{{ printf "%.0f" $value }} store writes are spooled on {{ $labels.instance }} and the spool has '
            f"grown for {SPOOL_FOR}: the database is unreachable or refuses writes. Stored evaluations, "
            "`m3mon slo status` and the weekly report lag until it is back.",
            for_=SPOOL_FOR,
        ),
    ]


def leak_edge(ceiling: int) -> int:
    """The smallest edge of vLLM's 1-2-5 ``request_prompt_tokens`` buckets at or above ``ceiling``:
    requests counted above it are surely over the ceiling (those between are not visible)."""
    scale = 1
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * scale >= ceiling:
                return mantissa * scale
        scale *= 10


def routing_leak_expr(model: Model) -> str:
    """Requests over ``ROUTING_LEAK_WINDOW`` whose prompt exceeded the ceiling edge of the largest
    class each pool serves, per endpoint, labelled with that ``ceiling``. A pool whose histogram has
    no such edge (its max-model-len is below it: vLLM refuses those prompts) yields nothing."""
    terms = []
    for e in model.endpoints:
        ceiling = max(model.request_class(c).max_context_tokens for c in e.classes)
        edge = leak_edge(ceiling)
        sel = [(cv.L_JOB, q.eq(model.alerting.job_vllm)), (cv.L_ENDPOINT, q.eq(e.name))]
        count = f"{cv.VLLM_PROMPT_TOKENS_HIST}_count{q.matchers(sel)}"
        le_edge = '=~"' + str(edge) + '(\\\\.0)?"'  # vLLM writes float edges: le="50000.0"
        below = f"{cv.VLLM_PROMPT_TOKENS_HIST}_bucket{q.matchers([*sel, ('le', le_edge)])}"
        over = (f"sum by (endpoint) (increase({count}[{ROUTING_LEAK_WINDOW}]))\n"
                f"  - sum by (endpoint) (increase({below}[{ROUTING_LEAK_WINDOW}]))")  # fmt: skip
        terms.append(f'label_replace(\n  {over},\n  "ceiling", "{ceiling}", "", ""\n) > 0')
    return "\nor\n".join(terms)


def _routing(model: Model) -> list[Alert]:
    if not model.endpoints:
        return []
    return [
        Alert(
            cv.ALERT_ROUTING_LEAK,
            routing_leak_expr(model),
            "ticket",
            "Requests above the class ceiling reach {{ $labels.endpoint }}",
            '{{ printf "%.0f" $value }} request(s) with prompts above the bucket edge over the '
            "{{ $labels.ceiling }}-token ceiling of the classes {{ $labels.endpoint }} serves were "
            f"served there in the last {ROUTING_LEAK_WINDOW}: the router sends long prompts to the wrong "
            "pool, and the pool's max-model-len lets them in.",
        )
    ]


def operational_groups(model: Model) -> list[Group]:
    """The operational alert groups."""
    return [
        Group("m3mon-operational-routing", alerts=tuple(_routing(model))),
        Group("m3mon-operational-availability", alerts=tuple(_availability(model))),
        Group("m3mon-operational-stall", alerts=tuple(stall_alerts(model))),
        *probe_groups(model),
        Group("m3mon-operational-saturation", alerts=tuple(_saturation(model))),
        Group("m3mon-operational-efficiency", alerts=tuple(_efficiency(model))),
        Group("m3mon-operational-tail", alerts=tuple(_tail(model))),
        Group("m3mon-operational-store", alerts=tuple(_store(model))),
        Group("m3mon-self", alerts=tuple(self_alerts(model))),
    ]
