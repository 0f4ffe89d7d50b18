"""Time to exhaustion: when the period's error budget runs out if the current burn goes on.

For an SLO with ``R`` of its period's budget left (``1 − burn rate over the period``) and a
burn rate ``b`` over a recent window (``1h`` short, ``1d`` long; 1 spends the budget exactly
over the period ``P``), the budget shrinks by ``b / P`` per second, so it is gone after

    T = R × P / b

* ``R <= 0``: the budget is already spent, ``T = 0`` whatever the window shows;
* ``b = 0`` (events, none bad): never at this burn, ``T = +Inf``;
* no events in the period or the window: no data, ``None``.

This is a linear projection: it ignores that old events leave the rolling period, so it is
pessimistic for a budget spent long ago and exact for a burn that started within the window.
The generated rules (:mod:`monitor.generate.exhaustion`) compute the same from the same records,
and the ``exhaustion_within`` alert fires when both windows project exhaustion sooner than the
SLO's limit while the long window holds the events of the burn alert guard for that window
(:func:`monitor.slo.guard.min_events`), so one failure in a quiet day cannot ticket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from monitor.conventions import BURN_ALERTS, EXHAUSTION_WINDOWS, period_window
from monitor.model import SLO
from monitor.slo.evaluate import SLOEvaluation
from monitor.slo.guard import min_events


@dataclass(frozen=True)
class Exhaustion:
    """Projected seconds to exhaustion per window (None: no data; inf: not burning)."""

    slo_id: str
    by_window: tuple[tuple[str, float | None], ...]

    def seconds(self, window: str) -> float | None:
        return dict(self.by_window).get(window)


#: Names of the period windows (an SLO's period is 28d or 30d).
PERIOD_WINDOWS = (period_window(28 * 86400.0), period_window(30 * 86400.0))


def time_to_exhaustion(evaluation: SLOEvaluation, window: str) -> float | None:
    """``T`` for ``window`` of an evaluation (see the module docstring)."""
    period = next((w for w in evaluation.windows if w.window in PERIOD_WINDOWS), None)
    if period is None or period.budget_remaining is None:
        return None
    if period.budget_remaining <= 0:
        return 0.0
    w = evaluation.window(window)
    if w is None or w.total <= 0:
        return None
    error_ratio = (w.total - w.good) / w.total
    if error_ratio <= 0:
        return math.inf
    budget = round(1.0 - evaluation.objective, 12)  # as SLO.budget
    return period.budget_remaining * (period.end - period.start) / (error_ratio / budget)


def exhaustion(evaluation: SLOEvaluation) -> Exhaustion:
    return Exhaustion(
        evaluation.slo_id, tuple((w, time_to_exhaustion(evaluation, w)) for w in EXHAUSTION_WINDOWS)
    )


def guard(slo: SLO) -> int:
    """Valid events the long window must hold: the guard of the burn alert with that long window."""
    long_window = EXHAUSTION_WINDOWS[-1]
    row = next(b for b in BURN_ALERTS if b.long_window == long_window)
    return min_events(slo, row)


def exhaustion_alert(slo: SLO, evaluation: SLOEvaluation) -> bool:
    """Whether the ``exhaustion_within`` alert of ``slo`` holds at the evaluation's instant."""
    if slo.exhaustion_within is None:
        return False
    limit = slo.exhaustion_within
    times = [time_to_exhaustion(evaluation, w) for w in EXHAUSTION_WINDOWS]
    long_w = evaluation.window(EXHAUSTION_WINDOWS[-1])
    enough = long_w is not None and long_w.total >= guard(slo)
    return enough and all(t is not None and t < limit for t in times)


#: Beyond this a time is printed as "more than a year": "37263d 2h" says nothing more.
YEAR = 365 * 86400.0


def format_seconds(value: float | None) -> str:
    """``no data``, ``never``, ``0s`` (spent), ``> 1y`` beyond a year, else the largest two units:
    ``3d 4h``, ``2h 30m``."""
    if value is None:
        return "no data"
    if math.isinf(value):
        return "never"
    if value > YEAR:
        return "> 1y"
    seconds = round(value)
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size or (unit == "s" and not parts):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return " ".join(parts[:2])
