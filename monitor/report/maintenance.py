"""The report's "Maintenance" section: the week's maintenance occurrences and what they excluded.

Every occurrence of the model's windows (config and maintenance file,
:mod:`monitor.maintenance`) that overlaps the reported period is listed with what it applies
to, its times in the report's time zone, its reason and its state at the report's end (past, in
progress, planned). Its excluded events are the stored slices that name the window
(``event_slices.maintenance``) and end inside the occurrence's ``(start, end]`` and inside the
report's ``(start, as_of]``: per class and SLO, the sum of their ``total``. Slices excluded by a
window the config no longer has are listed apart, so no excluded event goes unmentioned. Nothing
after ``as_of`` is read: the section is as reproducible as the rest of the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.maintenance import MaintenanceWindow, Occurrence
from monitor.model import Model
from monitor.report.occurrences import applies_to, state
from monitor.report.redact import Redactor
from monitor.store.tables import EventSliceRow

#: What the section says when no occurrence overlaps the period.
NOTHING = "No maintenance this week."


@dataclass(frozen=True)
class Excluded:
    """Events of one SLO a window kept out of every SLI."""

    request_class: str
    slo: str
    events: float


@dataclass(frozen=True)
class MaintenanceLine:
    """One occurrence overlapping the period."""

    window: str
    classes: tuple[str, ...]  # as configured
    endpoints: tuple[str, ...]
    start: datetime  # in the report's time zone
    end: datetime
    seconds: float
    reason: str
    state: str  # at the report's end: past, in progress, planned
    excluded: tuple[Excluded, ...]  # per class and SLO, in the model's order

    @property
    def applies_to(self) -> str:
        return applies_to(self.classes, self.endpoints)

    @property
    def shown(self) -> str:
        """The excluded-events cell: counts, "none", or "—" before the occurrence started."""
        if self.excluded:
            return excluded_text(self.excluded)
        return "—" if self.state == "planned" else "none"


@dataclass(frozen=True)
class MaintenanceSection:
    lines: tuple[MaintenanceLine, ...] = ()
    #: (window, counts) of slices excluded by windows no longer in the configuration.
    unlisted: tuple[tuple[str, Excluded], ...] = ()


class _Counter:
    """Excluded events per SLO from ``event_slices``, ordered as the model lists its SLOs."""

    def __init__(self, model: Model, session: Session) -> None:
        self.session = session
        self.order = {slo.id: (i, slo.request_class, slo.name) for i, slo in enumerate(model.slos)}

    def _excluded(self, slo_id: str, events: float) -> Excluded:
        if slo_id in self.order:
            _, cls, name = self.order[slo_id]
        else:  # an SLO the configuration no longer has: its id is "class/name"
            cls, _, name = slo_id.partition("/")
        return Excluded(cls, name, events)

    def _key(self, slo_id: str) -> tuple[int, str]:
        return self.order.get(slo_id, (len(self.order), "", ""))[0], slo_id

    def window(self, name: str, start: float, end: float) -> tuple[Excluded, ...]:
        if end <= start:
            return ()
        s = EventSliceRow
        q = (
            select(s.slo_id, func.sum(s.total))
            .where(s.maintenance == name, s.end > start, s.end <= end)
            .group_by(s.slo_id)
        )
        rows = sorted(self.session.execute(q).all(), key=lambda r: self._key(r[0]))
        return tuple(self._excluded(slo_id, float(total)) for slo_id, total in rows)

    def unlisted(self, known: set[str], start: float, end: float) -> tuple[tuple[str, Excluded], ...]:
        s = EventSliceRow
        q = (
            select(s.maintenance, s.slo_id, func.sum(s.total))
            .where(s.maintenance.is_not(None), s.end > start, s.end <= end)
            .group_by(s.maintenance, s.slo_id)
        )
        rows = [r for r in self.session.execute(q).all() if r[0] not in known]
        rows.sort(key=lambda r: (r[0], self._key(r[1])))
        return tuple((str(w), self._excluded(slo_id, float(total))) for w, slo_id, total in rows)


def _line(
    w: MaintenanceWindow,
    o: Occurrence,
    tz: tzinfo | None,
    counts: tuple[Excluded, ...],
    at: float,
    reason: str,
) -> MaintenanceLine:
    return MaintenanceLine(
        window=o.window,
        classes=w.classes,
        endpoints=w.endpoints,
        start=datetime.fromtimestamp(o.start, tz),
        end=datetime.fromtimestamp(o.end, tz),
        seconds=o.end - o.start,
        reason=reason,
        state=state(o, at),
        excluded=counts,
    )


def collect_maintenance(
    model: Model, session: Session, start: datetime, end: datetime, as_of: float, red: Redactor
) -> MaintenanceSection:
    """Occurrences overlapping ``(start, end]``; excluded events counted up to ``as_of``."""
    since, tz, counter = start.timestamp(), start.tzinfo, _Counter(model, session)
    lines = []
    for o in model.maintenance.occurrences(since, end.timestamp()):
        counts = counter.window(o.window, max(o.start, since), min(o.end, as_of))
        window = model.maintenance.window(o.window)
        lines.append(_line(window, o, tz, counts, as_of, red.text(o.reason)))
    known = {w.name for w in model.maintenance.windows}
    return MaintenanceSection(tuple(lines), counter.unlisted(known, since, as_of))


def excluded_text(items: tuple[Excluded, ...]) -> str:
    """``chat: availability 120, ttft-p95 96; agent: availability 40`` (plain text)."""
    by_class: dict[str, list[str]] = {}
    for e in items:
        by_class.setdefault(e.request_class, []).append(f"{e.slo} {_count(e.events)}")
    return "; ".join(f"{c}: {', '.join(parts)}" for c, parts in by_class.items())


def _count(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def markdown(section: MaintenanceSection, escape: Any, table: Any, when: Any, duration: Any) -> list[str]:
    """Markdown lines (``escape``, ``table``, ``when``, ``duration`` are the Markdown renderer's)."""
    out = ["## Maintenance", ""]
    if not section.lines:
        out += [NOTHING, ""]
    else:
        head = ["window", "applies to", "start", "end", "duration", "state", "reason", "excluded events"]
        rows = [
            [escape(m.window), escape(m.applies_to), when(m.start), when(m.end), duration(m.seconds),
             m.state, escape(m.reason) or "—", escape(m.shown)]
            for m in section.lines
        ]  # fmt: skip
        out += table(head, rows)
    if section.unlisted:
        items = "; ".join(f"{w}: {excluded_text((e,))}" for w, e in section.unlisted)
        out += [f"Also excluded, by windows no longer configured: {escape(items)}.", ""]
    return out


def to_json(section: MaintenanceSection) -> dict[str, Any]:
    def counts(items: tuple[Excluded, ...]) -> list[dict[str, Any]]:
        return [{"class": e.request_class, "slo": e.slo, "events": e.events} for e in items]

    return {
        "occurrences": [
            {
                "window": m.window,
                "classes": list(m.classes),
                "endpoints": list(m.endpoints),
                "start": m.start.isoformat(),
                "end": m.end.isoformat(),
                "duration_seconds": m.seconds,
                "state": m.state,
                "reason": m.reason,
                "excluded": counts(m.excluded),
            }
            for m in section.lines
        ],
        "unlisted": [{"window": w, **counts((e,))[0]} for w, e in section.unlisted],
    }
