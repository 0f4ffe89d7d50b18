"""Runbooks, one Markdown page per alert, rendered from ``templates/runbook.md.j2``.

The text lives here next to the alert names, so adding an alert without a runbook fails
:func:`render_runbooks` (and the test that regenerates the repository's ``alerts/runbooks``).
Remedies follow the MiniMax-M3 deployment guide's troubleshooting advice.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from monitor import conventions as cv
from monitor.errors import GenerateError

ROLLBACK = "If a deployment changed recently (see the *Deployment changes* annotations), roll it back."
FAILOVER = "Fail over: move the affected request class to another pool while you investigate."
KV = (
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

#: The SLO alerts' runbooks (the engine's are in :mod:`monitor.generate.engine_runbooks`).
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
            ROLLBACK,
            FAILOVER,
            "Latency SLO: lower concurrency (`--max-num-seqs`) or shed load. " + KV,
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
            KV,
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
    from monitor.generate.engine_runbooks import ENGINE_RUNBOOKS  # imports Runbook from here
    from monitor.generate.fleet_runbooks import FLEET_RUNBOOKS
    from monitor.generate.maintenance_rules import MAINTENANCE_RUNBOOKS
    from monitor.generate.self_runbooks import SELF_RUNBOOKS  # imports Runbook from here
    from monitor.generate.store_runbooks import STORE_RUNBOOKS

    return {
        **RUNBOOKS,
        **ENGINE_RUNBOOKS,
        **SELF_RUNBOOKS,
        **STORE_RUNBOOKS,
        **FLEET_RUNBOOKS,
        **MAINTENANCE_RUNBOOKS,
    }


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
