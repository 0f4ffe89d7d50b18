"""Error-ratio PromQL for each SLO, from the probe metrics or from vLLM's histograms.

Every expression is a ratio of sums over a ``[window]`` and has no labels of its own; the
recording rules attach ``class``, ``slo`` and ``sli``. Event counters that may not exist yet
(no failure of a reason so far) are wrapped in ``or vector(0)`` so a clean service records 0,
not nothing; a missing denominator still yields nothing, which the absent alert catches.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.errors import GenerateError
from monitor.generate import promql as q
from monitor.model import SLO, Model

_AVAIL_REASONS = tuple(r for r in cv.FAILURE_CATEGORIES if r in cv.AVAILABILITY_FAILURES)
_CORRECT_REASONS = tuple(r for r in cv.FAILURE_CATEGORIES if r not in cv.AVAILABILITY_FAILURES)


def _probe_sum(model: Model, slo: SLO, window: str, reasons: tuple[str, ...] | None = None) -> str:
    pairs = [(cv.L_JOB, q.eq(model.alerting.job_monitor)), (cv.L_CLASS, q.eq(slo.request_class))]
    if reasons is not None:
        pairs += [(cv.L_RESULT, q.eq(cv.RESULT_FAILURE)), (cv.L_REASON, q.regex(reasons))]
    return f"sum(rate({cv.PROBE_TOTAL}{q.matchers(pairs)}[{window}]))"


def _probe_availability(model: Model, slo: SLO, window: str) -> str:
    failed = q.or_zero(_probe_sum(model, slo, window, _AVAIL_REASONS))
    return f"{failed}\n/\n{_probe_sum(model, slo, window)}"


def _probe_correctness(model: Model, slo: SLO, window: str) -> str:
    wrong = q.or_zero(_probe_sum(model, slo, window, _CORRECT_REASONS))
    unanswered = q.or_zero(_probe_sum(model, slo, window, _AVAIL_REASONS))
    return f"{wrong}\n/\n({_probe_sum(model, slo, window)} - {unanswered})"


def _latency_ratio(metric: str, pairs: list[tuple[str, str]], le: str, window: str) -> str:
    bucket = q.matchers([*pairs, ("le", q.eq(le))])
    total = q.matchers(pairs)
    good = q.or_zero(f"sum(rate({metric}_bucket{bucket}[{window}]))")
    return f"1 - (\n  {good}\n  /\n  sum(rate({metric}_count{total}[{window}]))\n)"


def _probe_latency(model: Model, slo: SLO, window: str) -> str:
    assert slo.threshold is not None
    pairs = [(cv.L_JOB, q.eq(model.alerting.job_monitor)), (cv.L_CLASS, q.eq(slo.request_class))]
    le = q.le_python_client(slo.threshold)
    return _latency_ratio(q.PROBE_LATENCY[slo.sli], pairs, le, window)


def server_threshold_le(slo: SLO) -> str:
    """The vLLM ``le`` string for ``slo``'s threshold; it must be one of vLLM's bucket edges."""
    assert slo.threshold is not None
    metric, edges = q.VLLM_LATENCY[slo.sli]
    if not any(abs(e - slo.threshold) < 1e-9 for e in edges):
        lower = max((e for e in edges if e < slo.threshold), default=None)
        upper = min((e for e in edges if e > slo.threshold), default=None)
        raise GenerateError(
            f"SLO {slo.id}: threshold {slo.threshold:g}s is not a bucket edge of {metric} "
            f"(nearest edges: {lower}, {upper}); a server-side latency SLO needs an exact edge"
        )
    return q.le_python_client(slo.threshold)


def _server_latency(model: Model, slo: SLO, window: str) -> str:
    metric, _ = q.VLLM_LATENCY[slo.sli]
    return _latency_ratio(metric, q.pool_matchers(model, slo), server_threshold_le(slo), window)


def _server_availability(model: Model, slo: SLO, window: str) -> str:
    pairs = q.pool_matchers(model, slo)

    def finished(reasons: tuple[str, ...] | None = None) -> str:
        extra = [] if reasons is None else [(cv.L_FINISHED_REASON, q.regex(reasons))]
        return f"sum(rate({cv.VLLM_REQUEST_SUCCESS}{q.matchers([*pairs, *extra])}[{window}]))"

    failed = q.or_zero(finished(cv.FINISHED_BAD))
    not_counted = q.or_zero(finished(cv.FINISHED_NOT_COUNTED))
    return f"{failed}\n/\n({finished()} - {not_counted})"


def error_ratio(model: Model, slo: SLO, window: str) -> str:
    """PromQL for the fraction of ``slo``'s events over ``window`` that were bad."""
    if slo.source == "probes":
        if slo.sli == "availability":
            return _probe_availability(model, slo, window)
        if slo.sli == "correctness":
            return _probe_correctness(model, slo, window)
        return _probe_latency(model, slo, window)
    if slo.sli == "availability":
        return _server_availability(model, slo, window)
    if slo.sli in q.VLLM_LATENCY:
        return _server_latency(model, slo, window)
    raise GenerateError(f"SLO {slo.id}: sli {slo.sli} cannot be measured from the server")


def presence_selector(model: Model, slo: SLO) -> str:
    """A selector whose absence means the SLI has no data at all (for the absent alert)."""
    if slo.source == "probes":
        metric = cv.PROBE_TOTAL if not slo.is_latency else q.PROBE_LATENCY[slo.sli] + "_count"
        return metric + q.monitor_selector(model.alerting, **{cv.L_CLASS: slo.request_class})
    metric = cv.VLLM_REQUEST_SUCCESS if not slo.is_latency else q.VLLM_LATENCY[slo.sli][0] + "_count"
    return metric + q.matchers(q.pool_matchers(model, slo))
