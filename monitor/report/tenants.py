"""The report's *Tenants* section: the SLOs declared per tenant or priority band, worst first.

A ``source: traffic`` SLO with ``tenants:`` or ``priorities:`` expands into one SLO per tenant
and band (``goodput.acme``, ``goodput.acme.interactive``). Each has its own :class:`SLOLine`,
computed once by :func:`monitor.report.collect.slo_line` from the stored events like every other
SLO; this module only groups those lines (per class and declared SLO, one table per scope: per
tenant, per band, per tenant and band), orders them worst first (least budget left, then lowest
attainment, no data last) and keeps :data:`~monitor.report.data.TENANTS_SHOWN` of each, counting
the statuses of the rest. The SLO table, the exhaustion table and the charts leave these lines out:
a hundred tenants would bury the class's own SLOs (every format shows them here; report.json keeps
each one under its class too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from monitor.report import display
from monitor.report.data import STATUSES, TENANTS_SHOWN, ClassSummary, Scope, SLOLine, TenantTable

#: How each scope's rows are named, singular and plural (every format).
SCOPE_WORDS: dict[Scope, tuple[str, str]] = {
    "tenant": ("tenant", "tenants"),
    "priority": ("priority band", "priority bands"),
    "tenant_priority": ("tenant and band", "tenants and bands"),
}


def scope_of(s: SLOLine) -> Scope:
    if s.tenant is not None and s.priority is not None:
        return "tenant_priority"
    return "tenant" if s.tenant is not None else "priority"


def declared(s: SLOLine) -> str:
    """The SLO's name as declared: its name without the ``.<tenant>[.<band>]`` it was expanded with."""
    suffix = ".".join(p for p in (s.tenant, s.priority) if p)
    return s.slo.removesuffix("." + suffix) if suffix else s.slo


def order_key(s: SLOLine) -> tuple[bool, float, bool, float, str]:
    """Worst first: least budget left, then lowest attainment; no data after every measured line."""
    budget, attained = s.budget_remaining, s.attainment
    return (budget is None, budget or 0.0, attained is None, attained or 0.0, s.slo)


def table_of(request_class: str, slo: str, scope: Scope, lines: Sequence[SLOLine]) -> TenantTable:
    ordered = sorted(lines, key=order_key)
    rest = ordered[TENANTS_SHOWN:]
    counts = tuple((st, n) for st in STATUSES if (n := sum(s.status == st for s in rest)))
    return TenantTable(request_class, slo, scope, tuple(ordered[:TENANTS_SHOWN]), len(rest), counts)


def collect_tenants(classes: Sequence[ClassSummary]) -> tuple[TenantTable, ...]:
    """One table per class, declared SLO and scope, in the configuration's order."""
    out = []
    for c in classes:
        groups: dict[tuple[str, Scope], list[SLOLine]] = {}
        for s in c.scoped:
            groups.setdefault((declared(s), scope_of(s)), []).append(s)
        out += [table_of(c.name, slo, scope, lines) for (slo, scope), lines in groups.items()]
    return tuple(out)


def who(s: SLOLine) -> str:
    """The row's tenant and band: ``acme``, ``interactive``, ``acme / interactive``."""
    return " / ".join(p for p in (s.tenant, s.priority) if p)


def more_line(t: TenantTable) -> str | None:
    """``and 45 more tenants, all met`` / ``…: 43 met, 2 no data``; None when every line is shown."""
    if not t.more:
        return None
    one, many = SCOPE_WORDS[t.scope]
    noun = one if t.more == 1 else many
    if len(t.more_status) == 1:
        st = t.more_status[0][0]
        how = "it" if t.more == 1 else "all"
        return f"and {t.more} more {noun}, {how} {display.status(st)}"
    return f"and {t.more} more {noun}: " + ", ".join(f"{n} {display.status(st)}" for st, n in t.more_status)


def heading(t: TenantTable) -> str:
    return f"{t.request_class} / {t.slo}: {t.total} {SCOPE_WORDS[t.scope][1 if t.total != 1 else 0]}"


def scoped_summary(c: ClassSummary) -> str | None:
    """Page one's line for a class's per-tenant and per-band SLOs: how many missed or are at risk,
    naming the worst; None when the class has none."""
    if not c.scoped:
        return None
    hot = sorted((s for s in c.scoped if s.status in ("missed", "at_risk")), key=order_key)
    n = len(c.scoped)
    if not hot:
        met = sum(s.status == "met" for s in c.scoped)
        return f"per-tenant and per-band SLOs: {met} of {n} met, none missed or at risk"
    w = hot[0]
    worst = (f"worst {w.slo} {display.attainment(w.attainment)} vs {display.objective(w.objective)}, "
             f"budget left {display.budget(w.budget_remaining)}")  # fmt: skip
    return f"per-tenant and per-band SLOs: {len(hot)} of {n} missed or at risk ({worst})"


def _cells(s: SLOLine) -> list[str]:
    return [
        display.attainment(s.attainment),
        f"{display.objective(s.objective)} / {s.period_window}",
        display.budget(s.budget_remaining),
        display.count(s.total),
        display.burn(s.burn_rate_recent),
        display.status(s.status),
    ]


HEAD = ["this week", "objective", "budget left", "requests", "burn (last day)", "status"]
INTRO = (
    "SLOs declared per tenant or priority band, each over that tenant's (band's) real requests "
    f"only; the {TENANTS_SHOWN} with the least budget left first (then the lowest attainment). The "
    "same figures as every other SLO's: the stored events of each tenant's own SLO."
)


def markdown(tables: Sequence[TenantTable], escape: Callable[[object], str], table: Any) -> list[str]:
    """Markdown lines (``escape`` and ``table`` are the Markdown renderer's)."""
    if not tables:
        return []
    out = ["## Tenants", "", INTRO, ""]
    for t in tables:
        rows = [[escape(who(s)), *_cells(s)] for s in t.rows]
        out += [f"### {escape(heading(t))}", "", *table([SCOPE_WORDS[t.scope][0], *HEAD], rows, range(1, 6))]
        more = more_line(t)
        out += [f"{escape(more)}.", ""] if more else []
    return out


def html_rows(t: TenantTable) -> list[tuple[str, str, list[str]]]:
    """Per row: its tenant (band), its status word for the badge, its cells (the HTML template's)."""
    return [(who(s), s.status, _cells(s)) for s in t.rows]


def to_json(tables: Sequence[TenantTable], line: Callable[[SLOLine], dict[str, Any]]) -> list[dict[str, Any]]:
    """The tables for report.json; each row is the SLO's own ``line`` (as in ``classes[].slos[]``)."""
    return [
        {
            "class": t.request_class,
            "slo": t.slo,
            "scope": t.scope,
            "count": t.total,
            "worst": [{**line(s), "tenant": s.tenant, "priority": s.priority} for s in t.rows],
            "more": t.more,
            "more_status": {st: n for st, n in t.more_status},
        }
        for t in tables
    ]
