"""Burn-rate factors and the detection time they give: one definition for pager, store and docs.

A row of :data:`monitor.conventions.BURN_ALERTS` fires while both its windows' error ratios are
above ``factor × budget`` (and the long window holds its minimum events). The workbook's factor
is the share of the period's budget the row allows its long window to spend (14.4× for 2 % in
1 h of 30 d), which makes a total outage page in ``14.4 × budget × 1 h``: 52 s at 99.9 %, but
43 min at 95 % and never at 90 % (14.4 × 10 % > 100 %). ``page_within`` on an SLO lowers the
factor of the first page row (never below 1×) so that a total outage pages within that time.

Detection (:func:`first_fire_minutes`): with steady traffic, a healthy long window before the
onset and a constant share ``e`` of bad events from it, the rules' long window holds ``e·k/L`` after
``k`` rule steps of one minute, and the row first fires at the smallest ``k`` with ``e·k/L >
factor·budget`` (its short window, shorter, is above the threshold from an earlier step); never
when ``e`` is not above ``factor·budget``. ``tests/generate/test_detection_objectives.py`` replays
these cases in the real promtool.
"""

from __future__ import annotations

from monitor.conventions import BURN_ALERTS, EXHAUSTION_WINDOWS, SLO_RULE_INTERVAL, BurnAlert, window_seconds
from monitor.model import SLO

STEP = window_seconds(SLO_RULE_INTERVAL)
#: Objectives the detection table covers (percent).
OBJECTIVES = (90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99)
#: Error shares the detection table covers: a total outage, and one event in ten bad.
ERROR_RATES = (1.0, 0.1)


def first_page_row() -> BurnAlert:
    return next(r for r in BURN_ALERTS if r.severity == "page")


def factor(slo: SLO, row: BurnAlert) -> float:
    """The burn-rate factor ``row`` fires above for ``slo`` (module docstring)."""
    return factor_of(row, slo.period, slo.budget, slo.page_within)


def factor_of(row: BurnAlert, period: float, budget: float, page_within: float | None) -> float:
    """:func:`factor` from an SLO's period, error budget (1 − objective) and ``page_within``."""
    workbook = row.factor(period)
    if page_within is None or row != first_page_row():
        return workbook
    # half a step short of page_within: the step at page_within is above the threshold, the one
    # before is not, whatever the rounding of the rule's literals
    fast = (page_within - STEP / 2) / (budget * window_seconds(row.long_window))
    return max(1.0, min(workbook, fast))


def threshold(slo: SLO, row: BurnAlert) -> float:
    """The error ratio both windows of ``row`` must exceed."""
    return factor(slo, row) * slo.budget


def first_fire_minutes(slo: SLO, row: BurnAlert, error_rate: float, history: int | None = None) -> int | None:
    """Rule steps (minutes) from the onset of ``error_rate`` to ``row`` first firing; None: never.

    ``history``: healthy minutes before the onset (None: at least the long window), so a young
    series' long window holds ``history + k`` minutes of events, not the whole window.
    """
    limit = threshold(slo, row)
    if error_rate <= limit:
        return None
    steps = window_seconds(row.long_window) // STEP
    before = steps if history is None else history
    for k in range(1, steps + 1):  # at k = steps the window holds only the fault: e > limit fires
        if error_rate * k > limit * min(steps, before + k) * (1 + 1e-12):
            return k
    return None


def detection(
    slo: SLO, severity: str, error_rate: float, history: int | None = None
) -> tuple[int, BurnAlert] | None:
    """The first row of ``severity`` to fire at ``error_rate`` and after how many minutes."""
    found = [
        (m, r)
        for r in BURN_ALERTS
        if r.severity == severity and (m := first_fire_minutes(slo, r, error_rate, history)) is not None
    ]
    return min(found, key=lambda x: x[0]) if found else None


def describe(slo: SLO, severity: str, error_rate: float) -> str:
    """``9 min (1h/5m at 14.4x)`` or ``never (needs > 72 % bad)``, for check-config and docs."""
    found = detection(slo, severity, error_rate)
    if found is None:
        lowest = min(threshold(slo, r) for r in BURN_ALERTS if r.severity == severity)
        return f"never (needs > {lowest * 100:.3g} % bad)"
    minutes, row = found
    return f"{_minutes(minutes)} ({row.long_window}/{row.short_window} at {factor(slo, row):.3g}x)"


def _minutes(minutes: int) -> str:
    if minutes >= 120:
        return f"{minutes / 60:.3g} h"
    return f"{minutes} min"


# --- the other SLO alerts: budget exhausted, exhaustion soon, metric absent ----------------------

#: ``for:`` of ``SLOMetricAbsent`` (seconds): the rule and its detection target read this one value.
ABSENT_FOR = 600
#: The ``exhaustion_within`` the detection table assumes for ``SLOErrorBudgetExhaustionSoon``.
TABLE_EXHAUSTION_WITHIN = 86400.0


def _steps(seconds: float) -> int:
    return round(seconds) // STEP


def exhausted_minutes(slo: SLO, error_rate: float, history: int | None = None) -> int | None:
    """Rule steps from the onset until ``SLOErrorBudgetExhausted`` fires; None: never.

    It fires once Σbad / Σvalid over the period reaches the budget (remaining ≤ 0). With steady
    traffic and ``history`` healthy minutes (None: the whole period) the period holds
    ``e·k / min(N, history + k)`` after ``k`` steps; at ``k = N`` only the fault, so it fires at the
    latest then when ``e`` reaches the budget, and never below it.
    """
    steps = _steps(slo.period)
    before = steps if history is None else history
    if error_rate < slo.budget * (1 - 1e-12):
        return None
    for k in range(1, steps + 1):
        if error_rate * k >= slo.budget * min(steps, before + k) * (1 - 1e-12):
            return k
    return None


def exhaustion_soon_minutes(
    slo: SLO, error_rate: float, within: float, history: int | None = None
) -> int | None:
    """Rule steps from the onset until ``SLOErrorBudgetExhaustionSoon`` (limit ``within`` seconds) fires.

    Both windows of :data:`~monitor.conventions.EXHAUSTION_WINDOWS` must project exhaustion sooner
    than ``within``: ``T_w = R × P / (r_w / budget)``, ``R = 1 − r_P / budget`` (``T = 0`` once the
    budget is spent), each ratio ``e·k / min(window, history + k)``; steady traffic is assumed to
    fill the long window's guard. None: never within the period.
    """
    period = _steps(slo.period)
    before = period if history is None else history
    windows = [_steps(window_seconds(w)) for w in EXHAUSTION_WINDOWS]

    def ratio(size: int, k: int) -> float:
        return error_rate * min(k, size) / min(size, before + k)

    for k in range(1, period + 1):
        remaining = 1 - ratio(period, k) / slo.budget
        if remaining <= 0 or all(
            remaining * slo.period / (ratio(w, k) / slo.budget) < within for w in windows
        ):
            return k
    return None


def absent_seconds(quiet: float | None) -> int:
    """Seconds from the last event to ``SLOMetricAbsent`` firing: the quiet window (probe SLOs: no
    completed probe within it; server SLOs: None, the series is stale at the first failed scrape),
    then ``for:``, then the evaluation that sees it (one rule step)."""
    return round(quiet or 0) + ABSENT_FOR + STEP


def describe_minutes(minutes: int | None, never: str) -> str:
    """``44 min``, ``7.2 h`` or ``never (…)``: a target in the table's and check-config's words."""
    return never if minutes is None else _minutes(minutes)


def describe_exhausted(slo: SLO, error_rate: float) -> str:
    return describe_minutes(
        exhausted_minutes(slo, error_rate), f"never (needs ≥ {slo.budget * 100:.3g} % bad)"
    )


def describe_exhaustion_soon(slo: SLO, error_rate: float, within: float) -> str:
    return describe_minutes(exhaustion_soon_minutes(slo, error_rate, within), "never")
