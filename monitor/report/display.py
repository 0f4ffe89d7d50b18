"""How the report writes numbers, times and statuses, the same way in every output.

The HTML, PDF, Markdown and Slack outputs all format through these functions, so a reader sees
the same digits everywhere and tests can look for the exact string. ``None`` is "no data".
"""

from __future__ import annotations

import math
from datetime import datetime

from monitor.conventions import ALERT_BUDGET_EXHAUSTED
from monitor.report.data import (
    AT_RISK_BUDGET,
    AT_RISK_BURN,
    SOURCE_DERIVED,
    DeploymentChange,
    Exhaustion,
    Incident,
    Period,
    ReaderLine,
    SLOChange,
    SLOLine,
    Status,
)
from monitor.report.latency_data import Breakdown
from monitor.slo import numbers

NO_DATA = numbers.NO_DATA

STATUS_TEXT: dict[Status, str] = {
    "met": "met",
    "at_risk": "at risk",
    "missed": "missed",
    "no_data": NO_DATA,
}
STATUS_ICON: dict[Status, str] = {"met": "✅", "at_risk": "⚠️", "missed": "❌", "no_data": "➖"}


def status(value: Status) -> str:
    return STATUS_TEXT[value]


def pct(ratio: float | None, digits: int = 3) -> str:
    """A ratio as a percentage with fixed decimals: ``0.9995`` -> ``99.950%``."""
    return numbers.percent(ratio, digits)


def attainment(ratio: float | None) -> str:
    return numbers.attainment(ratio)


def budget(ratio: float | None) -> str:
    """Share of the error budget left (negative when overspent)."""
    return numbers.budget(ratio)


def objective(ratio: float) -> str:
    """An objective as the user wrote it: ``0.999`` -> ``99.9%``."""
    return f"{round(ratio * 100, 6):g}%"


def reason(s: SLOLine) -> str:
    """Why an SLO has its status, in words beside it (``the last day burned 1.74×, above 1×``);
    empty when it is met or has no data."""
    words = {
        "below_objective": f"{attainment(s.attainment)} is below the objective {objective(s.objective)}",
        "exhausted": f"its {s.period_window} error budget is exhausted",
        "low_budget": f"less than {AT_RISK_BUDGET:.0%} of its {s.period_window} error budget left",
        "recent_burn": f"the last day burned {burn(s.burn_rate_recent)}, above {AT_RISK_BURN:g}×",
    }
    return "; ".join(words[c] for c in s.causes)


def breakdown_count(b: Breakdown) -> str:
    """The requests a breakdown row's means are over, named: ``684 probes`` or ``6,269 pool requests``."""
    return f"{count(b.count)} {'probes' if b.population == 'probe requests' else 'pool requests'}"


def burn(rate: float | None) -> str:
    if rate is None or math.isnan(rate):
        return NO_DATA
    return f"{rate:.2f}×"


def seconds(value: float | None) -> str:
    """A latency: milliseconds below one second, seconds with two decimals above."""
    if value is None or math.isnan(value):
        return NO_DATA
    if abs(value) < 1.0:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def duration(value: float) -> str:
    """A duration such as ``2h 05m`` or ``4m 10s``."""
    total = round(value)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s"


def count(value: float | None) -> str:
    """An event count with thousands separators; one decimal when interpolated (not whole)."""
    if value is None:
        return NO_DATA
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def threshold(value: float | None) -> str:
    return "" if value is None else f"≤ {seconds(value)}"


def when(value: datetime | None) -> str:
    """A wall-clock time in the report's timezone (the datetime carries it)."""
    if value is None:
        return "still firing"
    return value.strftime("%Y-%m-%d %H:%M")


def day(value: datetime) -> str:
    return value.strftime("%a %Y-%m-%d")


def previous_label(period: Period) -> str:
    """How the period before is named: ``last week``, or ``last week (partial: 21 h of history)``
    when the store's history begins inside it (it is not compared as if whole)."""
    held = period.history_seconds
    if held is None:
        return "last week"
    return f"last week (partial: {held / 3600:.0f} h of history)"


def _change(now: float | None, before: float | None, last: str = "last week") -> str:
    """Attainment change since last week, in percentage points."""
    if before is None or now is None:
        return f"no data {last} to compare"
    delta = (now - before) * 100
    if abs(delta) < 0.0005:
        return f"unchanged from {last}"
    return f"{delta:+.3f} points against {last}"


def _budget_before(left: float | None, last: str = "last week") -> str:
    """The same budget at the end of last week, for its trend on page one."""
    if left is None:
        return f"no data {last}"
    return f"{last} {budget(left)} left" if left >= 0 else f"{last} overspent by {budget(-left)}"


def costly_line(r: ReaderLine) -> str | None:
    """Page one's list of a class's incidents that cost budget, largest first (``None``: none did)."""
    if not r.costly:
        return None
    named = [
        f"{incident_kind(c.incident)} {when(c.incident.started_at)}: "
        + ", ".join(f"{slo} {budget(share)}" for slo, share in c.costs)
        for c in r.costly
    ]
    more = f"; and {r.costly_more} more in the appendix" if r.costly_more else ""
    return f"Incidents that cost {r.request_class} budget: " + "; ".join(named) + more + "."


def incident_kind(i: Incident) -> str:
    """An incident in one word or two: its severity, or "budget exhausted" for the exhaustion alert."""
    return "budget exhausted" if i.alertname == ALERT_BUDGET_EXHAUSTED else i.severity


def _derived_from(i: Incident) -> str:
    return "the stored evaluations" if i.alertname == ALERT_BUDGET_EXHAUSTED else "burn evaluations"


def exhausted_text(e: Exhaustion) -> str:
    """``queue-p95's error budget was exhausted for 2d 14h this period (from 2026-11-24 10:00)``."""
    still = ", still exhausted" if e.still else ""
    how_long = duration(e.seconds)
    return f"{e.slo}'s error budget was exhausted for {how_long} this period (from {when(e.since)}{still})"


def reader_line(r: ReaderLine) -> str:
    """One class in plain words (the reader's summary at the top of the report)."""
    if r.slo is None or r.objective is None:
        return f"{r.request_class}: no data — nothing was measured."
    parts = [f"{r.request_class}: {status(r.status)} — {r.slo} {attainment(r.attainment)} "
             f"against {objective(r.objective)}"]  # fmt: skip
    # the budget at last week's end is a point in time (its SLO period), whole however little of
    # last week the store holds; only the attainment change compares the two weeks
    left, period, before = r.budget_remaining, r.period_window, _budget_before(r.budget_previous)
    if left is None:
        parts.append(f"no events in its {period} period")
    elif left >= 0:
        parts.append(f"{budget(left)} of its {period} error budget left ({before})")
    else:
        parts.append(f"its {period} error budget is overspent by {budget(-left)} ({before})")
    i = r.incident
    if i is not None:
        how = f" (derived from {_derived_from(i)})" if i.source == SOURCE_DERIVED else ""
        cost = budget(r.incident_share)
        parts.append(f"the {incident_kind(i)} incident of {when(i.started_at)}{how} cost {cost} of it")
    elif not r.exhausted:
        parts.append("no incident")
    parts += [exhausted_text(e) for e in r.exhausted]
    parts.append(_change(r.attainment, r.attainment_previous, r.previous_label))
    return "; ".join(parts) + "."


#: How many changed settings the one-line summary of a deployment change names.
CHANGE_FIELDS = 3
#: Settings the one-line summary names in words (the others by their stored field name).
FIELD_WORDS = {"gpu_driver_version": "GPU driver", "gpu_firmware_version": "GPU firmware",
               "gpu_model": "GPU model", "gpu_count": "GPU count"}  # fmt: skip


def _moved(slos: tuple[SLOChange, ...]) -> SLOChange | None:
    """The SLO whose attainment moved most across the change (both sides measured)."""
    measured = [s for s in slos if s.before is not None and s.after is not None]
    return max(measured, key=lambda s: abs((s.after or 0.0) - (s.before or 0.0)), default=None)


def deployment_line(dep: DeploymentChange, hours: int) -> str:
    """A deployment change in plain words (page one): what changed and the SLO it moved most."""
    named = [f"{FIELD_WORDS.get(f, f)} {b} → {a}" for f, b, a in dep.changes[:CHANGE_FIELDS]]
    more = len(dep.changes) - CHANGE_FIELDS
    what = ", ".join(named) + (f" and {more} more setting{'s' if more > 1 else ''}" if more > 0 else "")
    line = f"{dep.endpoint} changed at {when(dep.at)}: {what or 'its fingerprint'}"
    s = _moved(dep.slos)
    if s is not None and attainment(s.before) != attainment(s.after):
        line += f"; {s.slo_id} {attainment(s.before)} in the {hours}h before, {attainment(s.after)} after"
    elif s is not None:
        line += f"; no SLO's attainment moved in the {hours}h before and after it"
    return line + "."
