"""What the demo prints: a progress line while it runs and the closing summary.

The summary is read back from the store the service wrote (not from memory), so it shows what a
user of ``m3mon slo status`` or the report would see.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from monitor.demo.serve import restart_hint
from monitor.model import Model
from monitor.report.data import Period
from monitor.slo import numbers
from monitor.slo.evaluate import burn_alerts
from monitor.store import Store
from monitor.store.evaluations import EvaluationRepo
from monitor.store.tables import ScrapeIntervalRow

if TYPE_CHECKING:
    from monitor.service.service import Service


TABLE_NOTE = """  (attained, budget left: the latest evaluation over the SLO period, which holds only
   these minutes of data, so a few failures spend many times a 30-day budget; worst status
   and fired: over the whole run, with the SRE Workbook's multi-window burn-rate conditions)"""
HISTORY_NOTE = """  (attained, budget left: the latest evaluation over the SLO period, which holds the
   generated history and these minutes; worst status and fired: over the live run only, with the
   SRE Workbook's multi-window burn-rate conditions; the week's incidents are in the report)"""


def _pct(value: float | None) -> str:
    return numbers.attainment(value)


def progress_line(service: Service, elapsed: float) -> str:
    outcomes = service.jobs.probe_outcomes
    failed = Counter({k: v for k, v in outcomes.items() if k != "ok"})
    worst = ", ".join(f"{k}={v}" for k, v in failed.most_common(3)) or "none"
    return f"  t+{elapsed:5.0f}s  probes {outcomes.total():4d}  failed {failed.total():3d} ({worst})"


def slo_table(model: Model, store: Store, since: float) -> list[str]:
    """Per SLO: objective, attainment over the run, worst status and the alerts it raised."""
    with store.session() as s:
        evaluations = EvaluationRepo(s).between(since, datetime.now(UTC).timestamp() + 1)
    w = max([14, *(len(slo.name) for slo in model.slos)])  # per-tenant SLOs are named <name>.<tenant>
    head = f"  {'class':<20} {'SLO':<{w}} {'objective':>9} {'attained':>9} {'budget left':>11}  worst status"
    rows = [head]
    order = {"no data": -1, "ok": 0, "burning": 1, "exhausted": 2}
    for slo in model.slos:
        evs = [e for e in evaluations if e.slo_id == slo.id]
        last = evs[-1] if evs else None
        period = last.window(slo.period_window) if last else None
        worst = max((e.status for e in evs), key=lambda st: order.get(st, 0), default="no data")
        alerts = sorted({f"{a.severity} {a.long_window}/{a.short_window}" for e in evs
                         for a in burn_alerts(slo, e.windows)})  # fmt: skip
        fired = f"  fired: {', '.join(alerts)}" if alerts else ""
        rows.append(
            f"  {slo.request_class:<20} {slo.name:<{w}} {slo.objective * 100:>8g}% "
            f"{_pct(period.attainment if period else None):>9} "
            f"{numbers.budget(period.budget_remaining if period else None):>11}  {worst}{fired}"
        )
    return rows


def _means(histograms: list[dict[str, Any]]) -> tuple[float, dict[str, float | None]]:
    """Requests and mean e2e / queue / prefill / decode seconds over stored intervals' histograms."""
    sums: dict[str, float] = dict.fromkeys(("e2e", "queue", "prefill", "decode"), 0.0)
    counts = dict(sums)
    for stored in histograms:
        for name in sums:
            h = stored.get(name)
            if h is not None and h.get("count"):
                sums[name] += float(h["sum"])
                counts[name] += float(h["count"])
    return counts["e2e"], {k: (sums[k] / counts[k] if counts[k] else None) for k in sums}


def _stored_histograms(store: Store, endpoint: str, start: float, end: float) -> list[dict[str, Any]]:
    """The histograms of the endpoint's stored intervals ending in ``(start, end]``."""
    s = ScrapeIntervalRow
    query = select(s.histograms).where(s.endpoint == endpoint, s.end > start, s.end <= end)
    with store.session() as session:
        return list(session.scalars(query))


def latency_lines(model: Model, store: Store, phases: list[tuple[str, float, float]]) -> list[str]:
    """Where latency went, per endpoint and phase: mean queue / prefill / decode against mean e2e."""
    cols = " ".join(f"{c:>8}" for c in ("requests", "e2e", "queue", "prefill", "decode"))
    rows = [f"  {'endpoint':<16} {'phase':<10} {cols}"]
    for endpoint in (e.name for e in model.endpoints):
        for phase, start, end in phases:
            count, means = _means(_stored_histograms(store, endpoint, start, end))
            cells = " ".join(f"{'-' if v is None else f'{v:.2f}s':>8}" for v in means.values())
            rows.append(f"  {endpoint:<16} {phase.split(':')[0]:<10} {count:>8.0f} {cells}")
    return rows


#: The demo reports the last week when its history holds more (the default two weeks): the week
#: before is then history too, so every line compares with last week.
REPORT_WEEK = 7 * 86400.0


def report_period(history_start: float | None, now: datetime) -> Period:
    """The demo report's period: the last 7 days when the generated history is longer, else from
    the history's start (the whole of it and the live run), else the last day."""
    from monitor.report.periods import since

    if history_start is None:
        return since("1d", now)
    if now.timestamp() - history_start > REPORT_WEEK:
        return since("7d", now)
    start = datetime.fromtimestamp(history_start, UTC)
    return Period(f"{start:%Y-%m-%d %H:%M} to {now:%Y-%m-%d %H:%M} UTC", start, now)


def write_artifacts(
    model: Model, out: Path, history_start: float | None = None
) -> tuple[list[str], list[str]]:
    """Generated rules, dashboards and the report, written into ``out``; returns what was written
    and the report's reader's summary (one line per class)."""
    from monitor.generate.output import rendered_files, write_files
    from monitor.report import display
    from monitor.report import generate as report

    config = Path(model.source)
    write_files(rendered_files(model, config.name, config.read_text(encoding="utf-8")), out / "generated")
    store = Store(model.storage.url)
    try:
        now = datetime.now(UTC)
        data = report.build(model, store, report_period(history_start, now), now)
        paths = report.write(report.render(data), out / "report")
    finally:
        store.close()
    story = [f"  {display.reader_line(r)}" for r in data.reader]
    return [str(out / "generated"), *(str(p) for p in paths.values())], story


def print_summary(
    model: Model, out: Path, phases: list[tuple[str, float, float]], history_start: float | None = None
) -> None:
    since = phases[0][1]
    store = Store(model.storage.url)
    try:
        print("\n== SLO status per class (from the store)")
        print("\n".join(slo_table(model, store, since)))
        print(HISTORY_NOTE if history_start is not None else TABLE_NOTE)
        print("\n== Where latency went (server-side means per phase, from the store)")
        print("\n".join(latency_lines(model, store, phases)))
    finally:
        store.close()
    written, story = write_artifacts(model, out, history_start)
    print("\n== The report's summary (in short)")
    print("\n".join(story))
    print("\n== Output")
    print(f"  everything is in {out}:")
    print(f"    {out / 'demo-config.yaml'}")
    print(f"    {model.storage.url}")
    for path in written:
        print(f"    {path}")
    print("\n== Watch it again")
    print("\n".join(restart_hint(out, model.exporter_listen)))
