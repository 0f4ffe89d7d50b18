"""Causes that refuse or repeat work, and the application's own time: load shedding (admission
rejections, 429/503 answers, probes refused), retry storms (retries in the tail, retried probe
runs, 5xx answers) and, for tool classes, tool turnaround (docs/bottleneck.md "The verdicts")."""

from __future__ import annotations

from monitor.bottleneck.cause_base import Cause, best, named
from monitor.bottleneck.evidence import SERVER, Evidence

RETRY_STORM = 0.10
SHED_PROBES, SHED_MIN = 0.05, 2
SHED_SERVER = 0.01
#: The API server's own answers (http_requests_total, sglang:http_responses_total) over the recent
#: window: a cause at this share of its answers and this many of them, not one error.
HTTP_SHARE, HTTP_MIN = 0.05, 10
#: Codes that refuse work for load (SGLang reports exact codes; vLLM groups them, and its queue
#: limits are read from admission_rejections_total instead: its "4xx" also holds bad requests).
SHED_CODES = ("429", "503")
ERROR_CODES = ("5xx", "500", "502", "504")


def shedding(e: Evidence) -> Cause | None:
    share = e.pool.rejected_share
    # a refusal that clients retry costs the retries' seconds (so the two keep one order)
    retried = best(e, "retry", "ttft")
    seconds = 0.0 if retried is None else retried.seconds
    if share is not None and share >= SHED_SERVER:
        why = f"{e.pool.rejections:g} admission rejections ({share:.0%} of requests)"
        return Cause("load_shedding", "retry", seconds, SERVER, why)
    shed, answers = e.pool.answered(*SHED_CODES)
    if shed >= HTTP_MIN and shed >= HTTP_SHARE * answers:
        why = f"the server answered 429/503 to {shed:g} of {answers:g} requests ({shed / answers:.0%})"
        return Cause("load_shedding", "retry", seconds, SERVER, why)
    if e.runs and e.shed >= SHED_MIN and e.shed / e.runs >= SHED_PROBES:
        why = f"{e.shed} of {e.runs} probe runs met a 429/503"
        return Cause("load_shedding", "retry", seconds, "probes", why)
    return None


def retries(e: Evidence) -> Cause | None:
    c = best(e, "retry", "ttft") or best(e, "retry", "e2e")
    if c is not None:
        return named(c, "retry_storm")
    if e.runs and e.retried / e.runs >= RETRY_STORM:
        return Cause("retry_storm", "retry", 0.0, "probes", f"{e.retried} of {e.runs} probe runs retried")
    if e.retried and shedding(e) is not None:
        # the server refuses work now and what it refused comes back: a retry policy (the client's
        # or a gateway's) is fixed behaviour, so a retried run beside sustained refusals shows it
        why = (f"{e.retried} probe run(s) retried in {e.window / 60:g} min while the server refuses "
               "requests: refused requests come back as retries")  # fmt: skip
        return Cause("retry_storm", "retry", 0.0, "probes", why)
    failed, answers = e.pool.answered(*ERROR_CODES)
    if failed >= HTTP_MIN and failed >= HTTP_SHARE * answers:
        why = (f"the server answered 5xx to {failed:g} of {answers:g} requests ({failed / answers:.0%}): "
               "clients and gateways retry what fails")  # fmt: skip
        return Cause("retry_storm", "retry", 0.0, SERVER, why)
    return None


def application(e: Evidence) -> Cause | None:
    """A class with tool loops: its tools and client (``application``: the e2e no server or
    network stage explains), or the server's turnaround after tool results."""
    if not e.tools:
        return None
    found = [c for s in ("application", "tool_turnaround") if (c := best(e, s, "e2e")) is not None]
    return named(max(found, key=lambda c: c.seconds, default=None), "application_bound")
