"""The report's incidents: alerts Alertmanager sent, and burns the store saw on its own.

Received alerts (the ``incidents`` table) are the record when Alertmanager is connected. Without it,
the store still knows when each SLO burned: every stored evaluation keeps the windows the burn-rate
alerts read. An evaluation is *burning* when one of the SLO's burn-rate conditions holds on them
(:func:`monitor.slo.evaluate.burn_alerts`, the pager's definition, docs/slo-events.md §3) — also
when its stored status is ``exhausted``, which takes precedence in the status but does not stop
the pager's burn alerts. Runs of burning evaluations become incidents
(:func:`monitor.store.incidents.derive_burn_incidents`). A derived incident that a received alert
covers (same SLO, overlapping in time) adds its peak burn rate to that alert; one no alert covers
is listed itself, marked as derived. A page and a ticket of one SLO that overlap (or touch) are
one burn episode (:func:`episode_groups`, one definition for both sources: the highest severity,
the earliest start, the latest end): derived stretches merge into one (:func:`episodes`), and so
do received alerts about one SLO (Alertmanager's page and ticket of one burn are one row; alerts
without an ``slo`` label stay one row each). Everything is read up to the report's end.

**Cost** (:meth:`IncidentReader.incidents`): an SLO alert fires *after* the bad events that made
it fire, so its cost is the SLO's bad events from the start of the longest burn window of its
severity before it started (page 6h, ticket 3d: the window a condition of that severity looked
back over; for an episode, the earliest such start among its alerts) through its end — never
before the end of the previous incident of the same SLO, nor before the report's period starts,
so incident costs never count an event twice and sum to at most the period's bad events.
Maintenance is excluded as everywhere (the store's counts). Other alerts (no ``slo`` label) cost
the events of their own duration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from monitor import conventions as cv
from monitor.model import SLO, Model
from monitor.report.data import SOURCE_DERIVED, BudgetCost, Incident
from monitor.report.events import Windows
from monitor.report.redact import Redactor
from monitor.slo.evaluate import STATUS_BURNING, STATUS_EXHAUSTED, burn_alerts
from monitor.store.incidents import BurnIncident, Burning, derive_burn_incidents
from monitor.store.queries import StoredBurn, burn_evaluations
from monitor.store.tables import IncidentRow


def incident_slos(model: Model, request_class: str | None, slo: str | None) -> list[SLO]:
    """SLOs an alert is about: its ``slo`` label (name or class/name), else all of its class."""
    slos = model.slos
    if slo:
        return [s for s in slos if s.id == slo or (s.name == slo and s.request_class == request_class)]
    return [s for s in slos if s.request_class == request_class] if request_class else []


def holding(
    model: Model, burns: list[StoredBurn], calm: dict[str, list[float]], severity: str
) -> tuple[list[Burning], dict[str, list[float]]]:
    """The evaluations among ``burns`` where a ``severity`` burn-rate condition held (severity
    :data:`EXHAUSTED`: whose stored status is ``exhausted``), and every other evaluation instant
    per SLO (``calm`` plus those of ``burns`` where none held)."""
    slos = {s.id: s for s in model.slos}
    hot: list[Burning] = []
    quiet = {k: list(v) for k, v in calm.items()}
    for b in burns:
        slo = slos.get(b.slo_id)
        held = {a.severity for a in burn_alerts(slo, b.windows)} if slo is not None else set()
        if slo is None and b.status == STATUS_BURNING:
            held = {b.severity or ""}  # an SLO no longer configured: trust the stored status
        if b.status == STATUS_EXHAUSTED:
            held.add(EXHAUSTED)
        if severity in held:
            hot.append((b.slo_id, b.request_class, b.slo_name, b.evaluated_at, severity, b.burn_rate()))
        else:
            quiet.setdefault(b.slo_id, []).append(b.evaluated_at)
    return hot, quiet


def derived_incidents(model: Model, session: Session, start: float, end: float) -> list[BurnIncident]:
    """Incidents derived from the stored evaluations, at some time in ``(start, end]``: one per
    stretch in which a page (or a ticket) burn-rate condition held, as the pager's alerts, and one
    per stretch in which the SLO period's budget was exhausted (severity :data:`EXHAUSTED`)."""
    burns, calm = burn_evaluations(session, start, end)
    found = []
    for severity in ("page", "ticket", EXHAUSTED):
        found += derive_burn_incidents(*holding(model, burns, calm, severity), end)
    return sorted(
        (i for i in found if i.ends_at is None or i.ends_at > start), key=lambda i: (i.starts_at, i.slo_id)
    )


#: Seconds an SLO alert of each severity looked back over: its longest burn window.
LOOKBACK = {
    severity: max(cv.window_seconds(a.long_window) for a in cv.BURN_ALERTS if a.severity == severity)
    for severity in {a.severity for a in cv.BURN_ALERTS}
}


#: The severity of a derived stretch of exhausted evaluations (its incident: the exhaustion alert's).
EXHAUSTED = "exhausted"


def kind_of(alertname: str, severity: str | None) -> str:
    """What an incident is about: its budget exhausted (:data:`EXHAUSTED`), or a burn ("burn").
    The two are never one episode: a budget stays exhausted for days after its burn stopped."""
    return EXHAUSTED if alertname == cv.ALERT_BUDGET_EXHAUSTED or severity == EXHAUSTED else "burn"


def _derived_key(b: BurnIncident) -> str:
    return f"{kind_of('', b.severity)} {b.slo_id}"


_T = TypeVar("_T")
#: Severities by rank: an episode has the highest of its alerts' (the first of equals).
_RANK = {"page": 2, "ticket": 1}


def highest(severities: Sequence[str]) -> str:
    """The highest of ``severities`` (page over ticket over anything else; the first of equals)."""
    return max(severities, key=lambda s: _RANK.get(s, 0))


def episode_groups(
    found: Sequence[_T], key: Callable[[_T], str], span: Callable[[_T], tuple[float, float | None]]
) -> list[list[_T]]:
    """Burn episodes: stretches of one ``key`` (an SLO) that overlap or touch, grouped, each group
    ordered by start. ``span`` gives a stretch's start and end (None: still open, so it reaches
    every later start)."""
    groups: list[list[_T]] = []
    reach: list[float | None] = []
    for item in sorted(found, key=lambda i: (key(i), span(i)[0])):
        start, end = span(item)
        if groups and key(groups[-1][0]) == key(item) and (reach[-1] is None or start <= reach[-1]):
            groups[-1].append(item)
            reach[-1] = None if reach[-1] is None or end is None else max(reach[-1], end)
        else:
            groups.append([item])
            reach.append(end)
    return groups


def _burn_span(b: BurnIncident) -> tuple[float, float | None]:
    return b.starts_at, b.ends_at


def _merged(group: Sequence[BurnIncident]) -> BurnIncident:
    """One episode of derived stretches: the highest severity, the earliest start, the latest end
    (open if any is), the highest peak, the evaluations summed."""
    ends = [b.ends_at for b in group]
    peaks = [b.peak_burn for b in group if b.peak_burn is not None]
    return dataclasses.replace(
        group[0],
        severity=highest([b.severity for b in group]),
        ends_at=None if None in ends else max(e for e in ends if e is not None),
        peak_burn=max(peaks) if peaks else None,
        evaluations=sum(b.evaluations for b in group),
    )


def episodes(found: Sequence[BurnIncident]) -> list[BurnIncident]:
    """Derived stretches of one SLO merged into one per burn episode (:func:`episode_groups`)."""
    merged = [_merged(g) for g in episode_groups(found, _derived_key, _burn_span)]
    return sorted(merged, key=lambda i: (i.starts_at, i.slo_id))


def _looks_back_from(members: Sequence[tuple[float, str]]) -> float:
    """Where an episode's cost starts: the earliest start of the burn windows that made its alerts
    fire, from each (start, severity); an exhaustion looks back over nothing."""
    return min(start - LOOKBACK.get(severity, 0.0) for start, severity in members)


@dataclasses.dataclass(frozen=True)
class _Charge:
    """What an incident costs is computed from: its SLOs, its start and end, how far it looks back."""

    slos: tuple[SLO, ...]
    started: float
    until: float
    lookback: float
    exhaustion: bool = False  # charged last, with what the burns left (:func:`_costs`)


def _uncharged(
    since: float, until: float, charged: Sequence[tuple[float, float]]
) -> list[tuple[float, float]]:
    """The pieces of ``(since, until]`` outside every ``charged`` interval."""
    pieces, at = [], since
    for lo, hi in sorted(charged):
        if lo > at:
            pieces.append((at, min(lo, until)))
        at = max(at, hi)
        if at >= until:
            break
    if at < until:
        pieces.append((at, until))
    return [(a, b) for a, b in pieces if b > a]


def _costs(w: Windows, charges: Sequence[_Charge], start: float, end: float) -> list[tuple[BudgetCost, ...]]:
    """Each incident's cost (module docstring), in the order of ``charges`` (sorted by start): the
    burns first, then each exhaustion with the bad events of its stretch no burn was charged."""
    charged_until: dict[str, float] = {}
    charged: dict[str, list[tuple[float, float]]] = {}
    out: dict[int, tuple[BudgetCost, ...]] = {}
    order = sorted(range(len(charges)), key=lambda k: charges[k].exhaustion)
    for k in order:
        c, costs = charges[k], []
        for slo in c.slos:
            since = max(start, c.started - c.lookback)
            if not c.exhaustion:
                since = max(since, charged_until.get(slo.id, start))
                charged_until[slo.id] = max(since, c.until)
            pieces = _uncharged(since, max(since, c.until), charged.get(slo.id, []))
            charged.setdefault(slo.id, []).append((since, max(since, c.until)))
            bad = 0.0
            for a, b in pieces:
                during = w.result(slo, a, b)
                bad += during.total - during.good
            allowed = slo.budget * w.period_at(slo, end).total
            costs.append(BudgetCost(slo.id, bad, allowed, bad / allowed if allowed > 0 else None))
        out[k] = tuple(costs)
    return [out[k] for k in range(len(charges))]


class IncidentReader:
    """Incidents of one period ``(start, end]`` (``end`` is the report's end, never later)."""

    def __init__(self, model: Model, session: Session, w: Windows, red: Redactor, tz: object) -> None:
        self.model, self.session, self.w, self.red, self.tz = model, session, w, red, tz

    def _time(self, t: float) -> datetime:
        return datetime.fromtimestamp(t, self.tz)  # type: ignore[arg-type]

    def received(self, start: float, end: float) -> list[tuple[IncidentRow, float | None]]:
        """Alerts firing at some time in the period, with their end as known at ``end``; not the
        informational ones (maintenance in progress: the report's maintenance section lists it)."""
        i = IncidentRow
        q = select(i).where(
            i.starts_at < end,
            or_(i.ends_at.is_(None), i.ends_at > start),
            i.alertname.not_in(cv.INFO_ALERT_NAMES),
        )
        rows = self.session.scalars(q.order_by(i.starts_at, i.id))
        return [(r, r.ends_at if r.ends_at is not None and r.ends_at <= end else None) for r in rows]

    def _slo_key(self, row: IncidentRow) -> str:
        """The burn an alert is about: its SLOs (an alert without an ``slo`` label is its own)."""
        if not row.slo:
            return f"alert {row.id}"
        ids = sorted(s.id for s in incident_slos(self.model, row.request_class, row.slo))
        kind = kind_of(row.alertname, row.severity)
        return f"{kind} slo " + (",".join(ids) if ids else f"{row.request_class}/{row.slo}")

    def _alert(
        self, group: Sequence[tuple[IncidentRow, float | None]], end: float
    ) -> tuple[Incident, _Charge]:
        """One row for the received alerts of one burn episode: the highest severity's alert
        (its name, summary and labels), the earliest start, the latest end (open if any is)."""
        severity = highest([r.severity or "" for r, _ in group])
        row = next(r for r, _ in group if (r.severity or "") == severity)
        starts = group[0][0].starts_at
        ends = [e for _, e in group]
        ended = None if None in ends else max(e for e in ends if e is not None)
        until = ended if ended is not None else end
        ann = row.annotations or {}
        red = self.red
        slos = tuple(incident_slos(self.model, row.request_class, row.slo))
        exhaustion = kind_of(row.alertname, row.severity) == EXHAUSTED
        members = [(r.starts_at, "" if exhaustion else r.severity or "") for r, _ in group]
        since = _looks_back_from(members) if row.slo else starts
        return Incident(
            alertname=red.text(row.alertname),
            severity=red.text(row.severity or ""),
            request_class=red.text(row.request_class) if row.request_class else None,
            slo=red.text(row.slo) if row.slo else None,
            started_at=self._time(starts),
            ended_at=self._time(ended) if ended is not None else None,
            duration_seconds=max(0.0, until - starts),
            summary=red.text(str(ann.get("summary") or ann.get("description") or ann.get("title") or "")),
            labels=red.labels(row.labels or {}),
            costs=(),
        ), _Charge(slos, starts, until, starts - since, exhaustion)

    def _derived(self, group: Sequence[BurnIncident], end: float) -> tuple[Incident, _Charge]:
        b = _merged(group)
        until = b.ends_at if b.ends_at is not None else end
        slos = tuple(s for s in self.model.slos if s.id == b.slo_id)
        exhaustion = b.severity == EXHAUSTED
        name, severity, summary = _derived_words(b, slos)
        labels = {"alertname": name, cv.L_CLASS: b.request_class, cv.L_SLO: b.slo, "severity": severity}
        since = b.starts_at if exhaustion else _looks_back_from([(g.starts_at, g.severity) for g in group])
        return Incident(
            name, severity, self.red.text(b.request_class), self.red.text(b.slo), self._time(b.starts_at),
            self._time(b.ends_at) if b.ends_at is not None else None, max(0.0, until - b.starts_at),
            self.red.text(summary), self.red.labels(labels), (), SOURCE_DERIVED, b.peak_burn,
        ), _Charge(slos, b.starts_at, until, b.starts_at - since, exhaustion)  # fmt: skip

    def incidents(self, start: float, end: float) -> list[Incident]:
        """One row per burn episode of the received alerts (each with the peak burn of the derived
        episodes it covers), then the derived episodes no received one covers; ordered by start."""
        found = derived_incidents(self.model, self.session, start, end)
        derived = sorted(
            episode_groups(found, _derived_key, _burn_span), key=lambda g: (g[0].starts_at, g[0].slo_id)
        )
        spans = [_merged(g) for g in derived]
        covered: set[int] = set()
        out: list[tuple[Incident, _Charge]] = []
        received = self.received(start, end)
        for group in episode_groups(
            received, lambda a: self._slo_key(a[0]), lambda a: (a[0].starts_at, a[1])
        ):
            incident, charge = self._alert(group, end)
            ids, kind = {s.id for s in charge.slos}, EXHAUSTED if charge.exhaustion else "burn"
            hits = [
                k
                for k, b in enumerate(spans)
                if b.slo_id in ids
                and kind_of("", b.severity) == kind
                and _overlap(b, charge.started, charge.until, end)
            ]
            covered.update(hits)
            peaks = [p for k in hits if (p := spans[k].peak_burn) is not None]
            out.append((dataclasses.replace(incident, peak_burn=max(peaks, default=None)), charge))
        out += [self._derived(g, end) for k, g in enumerate(derived) if k not in covered]
        out.sort(key=lambda pair: (pair[0].started_at, pair[0].source, pair[0].alertname, pair[0].slo or ""))
        costs = _costs(self.w, [charge for _, charge in out], start, end)
        return [dataclasses.replace(i, costs=c) for (i, _), c in zip(out, costs, strict=True)]


def _derived_words(b: BurnIncident, slos: Sequence[SLO]) -> tuple[str, str, str]:
    """A derived incident's alert name, severity and summary: those of the alert the stretch
    stands for (the exhaustion alert is a ticket)."""
    if b.severity == EXHAUSTED:
        period = f"{slos[0].period_window} " if slos else ""
        summary = (f"{b.slo_id} had its whole {period}error budget spent (none left); derived from the "
                   "stored evaluations")  # fmt: skip
        return cv.ALERT_BUDGET_EXHAUSTED, "ticket", summary
    name = cv.ALERT_BURN_PAGE if b.severity == "page" else cv.ALERT_BURN_TICKET
    peak = f" at up to {b.peak_burn:.1f}× the sustainable rate (1h)" if b.peak_burn is not None else ""
    return (
        name,
        b.severity,
        f"{b.slo_id} burned its error budget{peak}; derived from the stored burn evaluations",
    )


def _overlap(b: BurnIncident, start: float, until: float, end: float) -> bool:
    b_end = b.ends_at if b.ends_at is not None else end
    return b.starts_at <= until and start <= b_end
