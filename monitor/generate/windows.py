"""An SLO window's events and error ratio, as PromQL over the SLO's step records.

Every window's valid and bad events are the **sum of the step records** over the window (exact,
never extrapolated; docs/slo-events.md). Only the error ratio of the windows of
:data:`~monitor.conventions.RECORDED_WINDOWS` and of the SLO period is a recording rule; the
others (5m, 30m, 2h: at most 120 one-minute steps) are summed on demand by whoever reads them —
the notification annotations, the dashboards, the agreement tests — with the expression the
record would hold, so a recorded and an on-demand ratio are the same number.

``sel`` is a selector body such as ``{class="agent",slo="availability"}`` (one SLO) or
``{class=~"$class"}`` (a dashboard's SLOs: the expressions match series label for label).
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate.promql import num


def inside(window: str) -> str:
    """``window`` less half a rule step: the step records of ``(t - window, t]`` and not the one
    at ``t - window`` (Prometheus 2 range selectors include their left end, Prometheus 3 and
    VictoriaMetrics do not: half a step away from every step, both read the same samples)."""
    step = cv.window_seconds(cv.SLO_RULE_INTERVAL)
    return f"{cv.window_seconds(window) - step // 2}s"


def summed(kind: str, sel: str, window: str) -> str:
    """``kind`` (valid/bad) events of ``window``: the sum of its step records (absent: none)."""
    return f"sum_over_time({cv.slo_step_events_record(kind)}{sel}[{inside(window)}])"


def on_demand_ratio(sel: str, window: str) -> str:
    """Σbad / Σvalid of ``window``, only while the window holds events (never NaN)."""
    return f"{summed('bad', sel, window)}\n/\n({summed('valid', sel, window)} > 0)"


def budget_remaining(sel: str, period_window: str, budget: float) -> str:
    """The budget left over the period, as its record holds it, summed from the step records.

    The same number as :data:`~monitor.conventions.SLO_BUDGET_REMAINING_RECORD` (1 − Σbad/Σvalid ÷
    budget, nothing while the period holds no events) one hop from the step records: what the
    alerts read, so an engine that does not see a record written earlier in the same group run
    (vmalert) reads the step records one run old, never two (step -> period ratio -> budget ->
    alert; docs/fleet.md).
    """
    return f"(1 - {on_demand_ratio(sel, period_window)} / {num(budget, 12)})"


def recorded(window: str) -> bool:
    """Whether ``window``'s ratio is a recording rule (a recorded rolling window or a period)."""
    rolling = {w for w, _ in cv.ROLLING_WINDOWS}
    return window in cv.RECORDED_WINDOWS or window not in rolling


def ratio(sel: str, window: str) -> str:
    """``window``'s error ratio: its record where there is one, else summed on demand."""
    if recorded(window):
        return cv.sli_error_ratio_record(window) + sel
    return f"({on_demand_ratio(sel, window)})"
