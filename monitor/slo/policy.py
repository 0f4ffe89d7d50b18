"""Error-budget policy: whether deploys to a request class are frozen, and why (``m3mon budget gate``).

Each class has a policy (``request_classes[].budget_policy``; defaults when absent): deploys freeze

* while any SLO of the class has less than ``freeze_below`` of its period's error budget left
  (10 % by default; an exhausted budget is below any limit), or
* with ``freeze_on_page_burn`` (the default), while a page-level burn-rate condition holds for any
  SLO of the class (the condition the page alert fires on, its minimum-events guard included).

An SLO without data freezes nothing (a new class can deploy); the state says how many had none.
The gate, the report and ``slo status`` read the same stored evaluation (:mod:`monitor.slo.evaluate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from monitor.model import RequestClass
from monitor.slo import numbers
from monitor.slo.evaluate import STATUS_BURNING, SLOEvaluation
from monitor.slo.exhaustion import format_seconds


@dataclass(frozen=True)
class PolicyState:
    """The policy's verdict for one class at one instant."""

    request_class: str
    frozen: bool
    reasons: tuple[str, ...]  # why it is frozen; empty when not
    freeze_below: float
    freeze_on_page_burn: bool
    lowest: tuple[str, float] | None  # (SLO, budget left) of the SLO with the least budget left
    no_data: int  # SLOs without events in their period

    def line(self) -> str:
        """One line for a CI log: ``frozen: …`` or ``ok: …``."""
        return f"{'frozen' if self.frozen else 'ok'}: {self.detail()}"

    def detail(self) -> str:
        """The line without its verdict word (the report prints the verdict its own way)."""
        if self.frozen:
            return f"{self.request_class}: " + "; ".join(self.reasons)
        limit = f"{self.freeze_below * 100:g} %"
        lowest = f" (lowest: {self.lowest[0]} {numbers.budget(self.lowest[1])})" if self.lowest else ""
        burn = " and no page-level burn" if self.freeze_on_page_burn else ""
        missing = f"; {self.no_data} SLO(s) without data" if self.no_data else ""
        return (
            f"{self.request_class}: every SLO has at least {limit} of its budget left{burn}{lowest}{missing}"
        )


def staleness(request_class: str, newest: float | None, at: float, fresh_within: float) -> str | None:
    """Why the store cannot vouch for ``request_class`` at ``at`` (None when it can): no event of
    the class at all, or none newer than ``fresh_within`` — a monitor that stopped writing leaves
    a budget that looks healthy forever, so a gate fails closed on it."""
    if newest is None:
        return f"no events of {request_class} in the store (is `m3mon run` writing to it?)"
    age = at - newest
    if age > fresh_within:
        return (
            f"stale store: the newest event of {request_class} is {format_seconds(age)} old "
            f"(fresh within {format_seconds(fresh_within)}; is `m3mon run` writing to it?)"
        )
    return None


def policy_state(
    rc: RequestClass, evaluations: Sequence[SLOEvaluation], stale: str | None = None
) -> PolicyState:
    """Judge ``rc``'s policy on the evaluations of its SLOs (others are ignored); ``stale``
    (:func:`staleness`) freezes by itself."""
    policy = rc.budget_policy
    periods = {s.id: s.period_window for s in rc.slos}
    reasons: list[str] = [stale] if stale else []
    left: list[tuple[str, float]] = []
    no_data = 0
    for e in (e for e in evaluations if e.slo_id in periods):
        period = e.window(periods[e.slo_id])
        remaining = period.budget_remaining if period is not None else None
        if remaining is None:
            no_data += 1
            continue
        left.append((e.slo_name, remaining))
        if remaining < policy.freeze_below:
            reasons.append(
                f"{e.slo_name} has {numbers.budget(remaining)} of its {periods[e.slo_id]} error budget left "
                f"(policy: freeze below {policy.freeze_below * 100:g} %)"
            )
        if policy.freeze_on_page_burn and e.status == STATUS_BURNING and e.severity == "page":
            reasons.append(f"{e.slo_name} is burning its budget at page level (policy: freeze on page burn)")
    lowest = min(left, key=lambda item: item[1]) if left else None
    return PolicyState(
        rc.name,
        bool(reasons),
        tuple(reasons),
        policy.freeze_below,
        policy.freeze_on_page_burn,
        lowest,
        no_data,
    )
