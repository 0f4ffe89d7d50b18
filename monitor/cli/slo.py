"""``m3mon slo status|evaluate -c FILE``: SLO attainment, budget and burn from the store.

``status`` evaluates every SLO at ``--at`` (default now) from the stored event slices and prints
one row per SLO (``--json`` for machine use), then each class's bottleneck verdict over the last
15 minutes (or the ``--week``) from the stored probes (docs/bottleneck.md); ``evaluate`` stores
every due evaluation step (backfilling missed ones, see :mod:`monitor.slo.due`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from monitor.bottleneck.inputs import RECENT as VERDICT_RECENT
from monitor.bottleneck.inputs import WINDOW as VERDICT_WINDOW
from monitor.bottleneck.rules import Verdict
from monitor.errors import UsageError
from monitor.slo import numbers
from monitor.slo.evaluate import SLOEvaluation, WindowResult
from monitor.slo.exhaustion import exhaustion, format_seconds

if TYPE_CHECKING:
    from monitor.model import Model
    from monitor.store import Store

#: Windows shown in the status table, in order; "period" stands for the SLO's own (30d or 28d).
TABLE_WINDOWS = ("5m", "1h", "6h", "1d", "3d", "period", "week")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "slo", help="SLO status from the store", description="Evaluate SLOs from the store."
    )
    actions = p.add_subparsers(dest="slo_command", metavar="ACTION", required=True)
    st = actions.add_parser("status", help="print attainment, budget and burn of every SLO")
    st.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    st.add_argument("--at", metavar="TIME", help="ISO 8601 time (UTC unless it says) or Unix seconds")
    st.add_argument(
        "--week",
        metavar="YYYY-Www",
        help="an ISO week (in report.timezone, as the report's): status at its end, and its attainment "
        "as the report's 'this week' counts it",
    )
    st.add_argument("--json", action="store_true", help="print JSON instead of a table")
    st.set_defaults(func=run_status)
    ev = actions.add_parser("evaluate", help="store every due evaluation step (backfills up to 24h)")
    ev.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    ev.set_defaults(func=run_evaluate)


def parse_time(text: str | None, option: str = "--at") -> float:
    """Unix seconds from an ISO 8601 time or Unix seconds given as ``option``; now when absent."""
    if text is None:
        return time.time()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        d = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{option}: expected an ISO 8601 time or Unix seconds, got {text!r}") from None
    return (d if d.tzinfo else d.replace(tzinfo=UTC)).timestamp()


def _pct(v: float | None) -> str:
    return numbers.attainment(v)


def format_table(evaluations: list[SLOEvaluation], periods: dict[str, str]) -> str:
    """The status table: one row per SLO."""
    head = ["class", "slo", "objective", *(w if w != "period" else "period" for w in TABLE_WINDOWS)]
    head += ["budget left", "burn 1h", "out in 1h/1d", "status"]
    rows = [head]
    for e in evaluations:
        wins = [e.window(periods[e.slo_id] if w == "period" else w) for w in TABLE_WINDOWS]
        period = e.window(periods[e.slo_id])
        burn = e.window("1h")
        status = e.status + (f" ({e.severity})" if e.severity else "")
        rows.append(
            [e.request_class, e.slo_name, f"{e.objective * 100:g}%"]
            + [_pct(w.attainment if w else None) for w in wins]
            + [
                numbers.budget(period.budget_remaining if period else None),
                "-" if burn is None or burn.burn_rate is None else f"{burn.burn_rate:.2f}",
                "/".join(format_seconds(t) for _, t in exhaustion(e).by_window),
                status,
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _exhaustion_json(e: SLOEvaluation) -> dict[str, float | str | None]:
    """Seconds per window; ``"never"`` while nothing burns, null without data (JSON has no Infinity)."""
    return {w: "never" if t is not None and math.isinf(t) else t for w, t in exhaustion(e).by_window}


def week_definition(timezone: str) -> str:
    """What the table's calendar column means (printed under it; the report says the same)."""
    return f"week: the ISO week (Monday 00:00 {timezone}) up to the status time"


def _iso_week(label: str, timezone: str) -> tuple[float, float]:
    """``(start, end)`` of the ISO week ``label`` in ``timezone``: the report's period computation
    (:func:`monitor.report.periods.iso_week`), its timezone too."""
    from monitor.errors import ReportError
    from monitor.report.periods import iso_week, zone

    try:
        period = iso_week(label, zone(timezone))
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    return period.start.timestamp(), period.end.timestamp()


def _week_to(at: float, timezone: str) -> tuple[float, float]:
    """The ISO week in ``timezone`` holding ``at``, up to ``at`` (the report's periods too)."""
    from monitor.report.periods import week_of, zone

    return week_of(datetime.fromtimestamp(at, UTC), zone(timezone)).start.timestamp(), at


def run_status(args: argparse.Namespace) -> int:
    from monitor.model import load_model
    from monitor.slo.evaluate import evaluate_counts, window_result
    from monitor.slo.windows import Window
    from monitor.store import Store

    model = load_model(args.config)
    if args.week and args.at:
        raise UsageError("give --week or --at, not both")
    timezone = model.report.timezone
    given = _iso_week(args.week, timezone) if args.week else None
    at = given[1] if given else parse_time(args.at)
    week = given or _week_to(at, timezone)
    store = Store(model.storage.url)
    try:
        store.check_schema()
        with store.counter() as counts:
            evaluations = [evaluate_counts(slo, at, counts) for slo in model.slos]
            weeks = [
                window_result(s, Window("week", *week, rolling=False), *counts(s.id, *week))
                for s in model.slos
            ]
        verdicts = _verdicts(model, store, week[0] if given else None, at)
        per_tenant = args.json and bool(
            model.traffic.tenants or model.traffic.top_tenants
        )  # labels exist only then
        tenants = (
            _tenant_tail(model, store, week[0] if given else at - VERDICT_RECENT, at) if per_tenant else []
        )
    finally:
        store.close()
    # the week in the report's timezone: with --week the whole ISO week, (Monday, Monday], the
    # report's "this week" of it; else the ISO week holding ``at`` up to ``at``
    evaluations = [_with_week(e, w) for e, w in zip(evaluations, weeks, strict=True)]
    definition = week_definition(timezone)
    if args.json:
        out = [{**asdict(e), "time_to_exhaustion": _exhaustion_json(e)} for e in evaluations]
        found = [{"class": v.request_class, **v.to_json()} for v in verdicts]
        doc = {"at": at, "week_definition": definition, "evaluations": out, "bottleneck": found,
               "tenant_tail": tenants}  # fmt: skip
        print(json.dumps(doc, indent=2))
    else:
        print(f"SLO status at {datetime.fromtimestamp(at, UTC).isoformat()} (attainment per window)")
        print(format_table(evaluations, {s.id: s.period_window for s in model.slos}))
        print(f"{definition}{f'; --week {args.week}: that whole week' if given else ''}")
        span = (
            f"--week {args.week}"
            if given
            else (f"the last {VERDICT_WINDOW / 60:g} min of probes, {VERDICT_RECENT / 60:g} min of the pool")
        )
        print(f"\nBottleneck over {span} (docs/bottleneck.md; from the store):")
        for v in verdicts:
            print(f"  {v.request_class}: {v.reason}")
    return 0


def _verdicts(model: Model, store: Store, start: float | None, end: float) -> tuple[Verdict, ...]:
    """Each class's verdict at ``end`` from the store — the service's own computation
    (:mod:`monitor.report.collect_bottleneck`); with ``start`` (``--week``) over that period, as
    the report computes it."""
    from monitor.report.collect_bottleneck import verdicts

    with store.session() as session:
        if start is None:
            return verdicts(model, session, end)
        return verdicts(model, session, end, end - start, end - start, state=end - start)


def _tenant_tail(model: Model, store: Store, start: float, end: float) -> list[dict[str, Any]]:
    """Per tenant, where its real traffic's tail is owned (docs/bottleneck.md "Per tenant") over
    the verdict's traffic window (``--week``: the week), as report.json's ``tenant_tail``."""
    from monitor.bottleneck.tenants import tenant_tails
    from monitor.report.collect_bottleneck import traffic
    from monitor.report.tenant_tail import to_json

    with store.session() as session:
        samples = traffic(model, session, start, end)
    return to_json(tenant_tails([c.name for c in model.classes], samples))


def _with_week(e: SLOEvaluation, week: WindowResult) -> SLOEvaluation:
    """``e`` with its calendar-week window replaced by ``week`` (the report's timezone)."""
    return dataclasses.replace(e, windows=tuple(week if w.window == "week" else w for w in e.windows))


def run_evaluate(args: argparse.Namespace) -> int:
    from monitor.model import load_model
    from monitor.slo.due import evaluate_due
    from monitor.store import Store

    model = load_model(args.config)
    store = Store(model.storage.url)
    try:
        store.check_schema()
        done = evaluate_due(store, model, time.time())
    finally:
        store.close()
    print(f"stored {len(done)} evaluations")
    return 0
