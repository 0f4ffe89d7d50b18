"""Everything the weekly report shows, as typed frozen values with every number final.

:mod:`monitor.report.collect` builds a :class:`ReportData` from the store; the renderers (HTML,
PDF, Markdown, JSON, Slack summary) only format it. No renderer computes a number, so the four
outputs cannot disagree. ``None`` always means "no data" and is shown as such, never as 100 %.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from monitor.bottleneck.rules import Verdict
from monitor.bottleneck.tail import TailShare
from monitor.bottleneck.tenants import TenantTails
from monitor.report.budget import ClassBudget
from monitor.report.goodput import GoodputSection
from monitor.report.latency_data import Breakdown, BreakdownSeries, LatencyStats
from monitor.report.maintenance import MaintenanceSection

#: Status of one SLO or one request class for the week (see docs/report.md "Status").
Status = Literal["met", "at_risk", "missed", "no_data"]
#: A rule of the status that holds for an SLO (:func:`status_causes`).
Cause = Literal["below_objective", "exhausted", "low_budget", "recent_burn"]
STATUSES: tuple[Status, ...] = ("missed", "at_risk", "met", "no_data")  # worst first

#: At risk when less than this share of the period's error budget is left.
AT_RISK_BUDGET = 0.25
#: At risk when the burn rate over the week's last day is above this (the budget would run out
#: before the period ends if the last day's rate went on).
AT_RISK_BURN = 1.0
#: The "recent" window whose burn rate decides "at risk".
RECENT_SECONDS = 86400.0


@dataclass(frozen=True)
class Period:
    """A stretch of time labelled for readers (``2026-W48``); holds slices ending in ``(start, end]``."""

    label: str
    start: datetime
    end: datetime
    history_from: datetime | None = None  # set when the store's history begins inside the period

    @property
    def history_seconds(self) -> float | None:
        """Seconds of history the period holds when it is partial (None: the whole period)."""
        if self.history_from is None:
            return None
        return max(0.0, self.end.timestamp() - self.history_from.timestamp())

    @property
    def seconds(self) -> float:
        """Elapsed seconds (timestamps: wall-clock subtraction would ignore a DST change)."""
        return self.end.timestamp() - self.start.timestamp()

    @property
    def definition(self) -> str:
        """What "this week" means in the report, in words (printed in every format)."""
        if re.fullmatch(r"\d{4}-W\d{2}", self.label):
            tz = self.start.tzinfo
            return (
                f'"this week" is the ISO week {self.label}, Monday to Monday; `m3mon slo status --week '
                f"{self.label}` counts the same events (in {getattr(tz, 'key', None) or tz or 'UTC'})"
            )
        return f'"this week" is the report\'s period, {self.label}, not a calendar week'


@dataclass(frozen=True)
class SLOLine:
    """One SLO's numbers for the week."""

    slo: str  # SLO name within its class
    sli: str
    objective: float  # ratio, e.g. 0.999
    threshold: float | None  # seconds, latency SLIs only
    period_window: str  # the SLO's budget period, e.g. "30d"
    good: float  # good events this week
    total: float  # all events this week
    attainment: float | None  # good / total this week
    attainment_previous: float | None  # same for the week before
    budget_remaining: float | None  # share of the period's error budget left at the week's end
    burn_rate: float | None  # (1 - attainment) / (1 - objective) over the week
    burn_rate_recent: float | None  # the same over the week's last day (RECENT_SECONDS)
    status: Status
    budget_remaining_previous: float | None = None  # the same budget at the end of the week before
    tenant: str | None = None  # a traffic SLO declared per tenant: its tenant (or "other")
    priority: str | None = None  # a traffic SLO declared per priority band: its band

    @property
    def scoped(self) -> bool:
        """Whether it is one tenant's or one priority band's SLO (shown in the Tenants section)."""
        return self.tenant is not None or self.priority is not None

    @property
    def budget(self) -> float:
        return 1.0 - self.objective

    @property
    def causes(self) -> tuple[Cause, ...]:
        """Why it has its status (:func:`status_causes`)."""
        return status_causes(self.attainment, self.objective, self.budget_remaining, self.burn_rate_recent)


@dataclass(frozen=True)
class ClassSummary:
    """The headline of one request class: its worst SLO status (every SLO's, per-tenant ones
    included), the line of each SLO declared for all its traffic (``slos``) and of each SLO of one
    tenant or priority band (``scoped``, shown in the Tenants section, not the SLO table)."""

    name: str
    description: str
    status: Status
    slos: tuple[SLOLine, ...]
    scoped: tuple[SLOLine, ...] = ()

    @property
    def every_slo(self) -> tuple[SLOLine, ...]:
        return self.slos + self.scoped


@dataclass(frozen=True)
class SeriesPoint:
    """One point of the attainment and budget burn-down chart (cumulative from the period start)."""

    at: datetime
    attainment: float | None
    budget_remaining: float | None
    events: float = 0.0  # events in the step ending at ``at``: 0 is a gap in the chart


@dataclass(frozen=True)
class SLOSeries:
    request_class: str
    slo: str
    objective: float
    points: tuple[SeriesPoint, ...]


@dataclass(frozen=True)
class BudgetCost:
    """Budget one incident cost one SLO: bad events during it over the period's allowed bad events."""

    slo_id: str  # "class/slo"
    bad: float
    allowed: float  # (1 - objective) x events in the SLO period ending at the week's end
    share: float | None  # bad / allowed; None when nothing was allowed (no events in the period)


#: Where an incident comes from: an alert Alertmanager sent, or the store's own burn evaluations.
SOURCE_ALERTMANAGER = "alertmanager"
SOURCE_DERIVED = "derived"


@dataclass(frozen=True)
class Incident:
    """An alert that fired during the week, as the Alertmanager receiver recorded it, or a stretch
    of burning evaluations no received alert covers (``source`` "derived")."""

    alertname: str
    severity: str
    request_class: str | None
    slo: str | None
    started_at: datetime
    ended_at: datetime | None  # None while still firing at the week's end
    duration_seconds: float  # until ended_at, or until the week's end while still firing
    summary: str
    labels: tuple[tuple[str, str], ...]
    costs: tuple[BudgetCost, ...]
    source: str = SOURCE_ALERTMANAGER
    peak_burn: float | None = None  # highest 1h burn rate of the burning evaluations it covers


@dataclass(frozen=True)
class ProbeFailure:
    """Failed probes of one class and category this week, with the latest one-line detail."""

    request_class: str
    category: str
    count: int
    example: str


@dataclass(frozen=True)
class SLOChange:
    """One SLO's attainment in the window before and after a deployment change."""

    slo_id: str
    before: float | None
    after: float | None


@dataclass(frozen=True)
class DeploymentChange:
    endpoint: str
    at: datetime
    changes: tuple[tuple[str, str, str], ...]  # (field, before, after)
    slos: tuple[SLOChange, ...]


@dataclass(frozen=True)
class Capacity:
    """Capacity notes for one endpoint from the week's scrape intervals."""

    endpoint: str
    intervals: int
    peak_kv_cache: float | None  # fraction 0..1
    preemptions: float | None  # total over the week
    peak_waiting: float | None
    mean_waiting: float | None


#: How many tenants (or bands) each table of the Tenants section shows, the worst first.
TENANTS_SHOWN = 10
#: What one table of the Tenants section lists: SLOs per tenant, per band, or per tenant and band.
Scope = Literal["tenant", "priority", "tenant_priority"]


@dataclass(frozen=True)
class TenantTable:
    """One declared SLO of a class expanded per tenant and/or priority band: its worst
    :data:`TENANTS_SHOWN` lines (the same :class:`SLOLine` values as the class's ``scoped``), worst
    first (least budget left, then lowest attainment; no data last), and how the rest fared."""

    request_class: str
    slo: str  # the SLO as declared, before its expansion (``goodput`` of ``goodput.acme``)
    scope: Scope
    rows: tuple[SLOLine, ...]
    more: int = 0  # lines not shown
    more_status: tuple[tuple[Status, int], ...] = ()  # the statuses of those, worst first (count > 0)

    @property
    def total(self) -> int:
        return len(self.rows) + self.more


#: How many incidents page one names per class (largest cost first); the rest are counted.
PAGE_ONE_INCIDENTS = 5


@dataclass(frozen=True)
class CostlyIncident:
    """An incident as page one names it: what it cost each SLO of one class (shares above 0)."""

    incident: Incident
    costs: tuple[tuple[str, float], ...]  # (SLO name within the class, share of its period budget)

    @property
    def share(self) -> float:
        """Its largest share, by which page one orders the incidents of a class."""
        return max(share for _, share in self.costs)


@dataclass(frozen=True)
class ReaderLine:
    """One class in plain words: status, its worst SLO, budget left, the costliest incident, the
    change since the period before."""

    request_class: str
    status: Status
    slo: str | None  # the worst SLO (None: no data)
    attainment: float | None
    objective: float | None
    period_window: str | None
    budget_remaining: float | None
    attainment_previous: float | None
    incident: Incident | None  # the incident that cost the worst SLO most
    incident_share: float | None  # its share of that SLO's period budget
    budget_previous: float | None = None  # the worst SLO's budget left at the end of the week before
    costly: tuple[CostlyIncident, ...] = ()  # the class's incidents that cost budget, largest first
    costly_more: int = 0  # how many more cost budget than page one names (PAGE_ONE_INCIDENTS)
    exhausted: tuple[Exhaustion, ...] = ()  # the class's SLOs whose budget was exhausted in the period
    previous_label: str = "last week"  # how the period before is named (partial: with its hours)


@dataclass(frozen=True)
class Exhaustion:
    """How long one SLO's period budget was exhausted within the report's period (its incidents
    of the exhaustion alert, clipped to the period), and when the first such stretch began."""

    slo: str
    seconds: float
    since: datetime
    still: bool  # still exhausted at the report's end


@dataclass(frozen=True)
class ReportData:
    """The whole weekly report."""

    title: str
    source: str  # configuration file it was built from
    timezone: str
    generated_at: datetime
    week: Period
    previous_week: Period
    classes: tuple[ClassSummary, ...]
    series: tuple[SLOSeries, ...]
    latency: tuple[LatencyStats, ...]
    breakdown: tuple[Breakdown, ...]
    incidents: tuple[Incident, ...]
    probe_failures: tuple[ProbeFailure, ...]
    deployments: tuple[DeploymentChange, ...]
    capacity: tuple[Capacity, ...]
    deployment_window_seconds: float = 86400.0
    as_of: datetime | None = None  # every number ends here: the week's end or --now, the earlier
    series_step_seconds: float = 21600.0
    breakdown_series: tuple[BreakdownSeries, ...] = ()
    reader: tuple[ReaderLine, ...] = ()
    budget: tuple[ClassBudget, ...] = ()  # error-budget policy and time to exhaustion (report/budget.py)
    contract: tuple[Any, ...] = ()  # the operating contract per class (report/contract.py)
    maintenance: MaintenanceSection = field(default_factory=MaintenanceSection)  # report/maintenance.py
    goodput: GoodputSection = field(default_factory=GoodputSection)  # report/goodput.py
    tail: tuple[TailShare, ...] = ()  # report/tail.py: which stage owns the tail, per class
    bottleneck: tuple[Verdict, ...] = ()  # the bottleneck verdict per class (docs/bottleneck.md)
    traffic_tail: tuple[TailShare, ...] = ()  # report/collect_traffic.py: real traffic's tail, per class
    tenants: tuple[TenantTable, ...] = ()  # report/tenants.py: per-tenant and per-band SLOs, worst first
    tenant_tail: tuple[TenantTails, ...] = ()  # bottleneck/tenants.py: per tenant, who owns its tail

    @property
    def deployment_window_hours(self) -> int:
        """The window before and after a deployment change, in whole hours (as every format says it)."""
        return round(self.deployment_window_seconds / 3600)

    @property
    def end(self) -> datetime:
        """Where the report's data ends (:attr:`as_of`, else the week's end)."""
        return self.as_of if self.as_of is not None else self.week.end

    @property
    def status(self) -> Status:
        """The worst class status; ``no_data`` only when every class has no data."""
        return worst(c.status for c in self.classes)

    @property
    def attention(self) -> tuple[ClassSummary, ...]:
        """Classes that need attention (missed or at risk), worst first."""
        order = {s: i for i, s in enumerate(STATUSES)}
        hot = [c for c in self.classes if c.status in ("missed", "at_risk")]
        return tuple(sorted(hot, key=lambda c: order[c.status]))


def worst(statuses: Iterable[Status]) -> Status:
    """Worst of several statuses (missed > at_risk > met > no_data); ``no_data`` for none."""
    seen = set(statuses)
    return next((s for s in STATUSES if s in seen), "no_data")


def status_causes(
    attainment: float | None, objective: float, budget_remaining: float | None, burn_recent: float | None
) -> tuple[Cause, ...]:
    """Why an SLO has its status: the rules of :func:`slo_status` that hold (docs/report.md,
    Status), those of "missed" when any does, else those of "at risk"; none for met or no data."""
    if attainment is None:
        return ()
    missed: list[Cause] = []
    if attainment < objective:
        missed.append("below_objective")
    if budget_remaining is not None and budget_remaining <= 0:
        missed.append("exhausted")
    if missed:
        return tuple(missed)
    risk: list[Cause] = []
    if budget_remaining is not None and budget_remaining < AT_RISK_BUDGET:
        risk.append("low_budget")
    if burn_recent is not None and burn_recent > AT_RISK_BURN:
        risk.append("recent_burn")
    return tuple(risk)


def slo_status(
    attainment: float | None, objective: float, budget_remaining: float | None, burn_recent: float | None
) -> Status:
    """Status of one SLO for the week, exactly as docs/report.md defines it.

    missed: the week's attainment is below the objective, or the period's budget is exhausted.
    at_risk: otherwise, less than 25 % of the budget is left or the last day burned faster than 1.
    met: otherwise. no_data: no events at all this week.
    """
    if attainment is None:
        return "no_data"
    causes = status_causes(attainment, objective, budget_remaining, burn_recent)
    if "below_objective" in causes or "exhausted" in causes:
        return "missed"
    return "at_risk" if causes else "met"
