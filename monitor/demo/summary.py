"""What the demo prints: a progress line while it runs and the closing summary.

The summary is read back from the store the service wrote (not from memory), so it shows what a
user of ``m3mon slo status`` or the report would see.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from monitor.model import Model
from monitor.scrape.signals import Signals
from monitor.slo.evaluate import burn_alerts
from monitor.store import Store
from monitor.store.evaluations import EvaluationRepo

if TYPE_CHECKING:
    from monitor.service.service import Service


TABLE_NOTE = """  (attained, budget left: the latest evaluation over the SLO period, which holds only
   these minutes of data, so a few failures spend many times a 30-day budget; worst status
   and fired: over the whole run, with the SRE Workbook's multi-window burn-rate conditions)"""


def _pct(value: float | None) -> str:
    return "no data" if value is None else f"{value * 100:.2f}%"


def progress_line(service: Service, elapsed: float) -> str:
    results = service.jobs.probe_results
    failed = Counter(r.reason for r in results if not r.ok)
    worst = ", ".join(f"{k}={v}" for k, v in failed.most_common(3)) or "none"
    return f"  t+{elapsed:5.0f}s  probes {len(results):4d}  failed {sum(failed.values()):3d} ({worst})"


def slo_table(model: Model, store: Store, since: float) -> list[str]:
    """Per SLO: objective, attainment over the run, worst status and the alerts it raised."""
    with store.session() as s:
        evaluations = EvaluationRepo(s).between(since, datetime.now(UTC).timestamp() + 1)
    rows = [f"  {'class':<20} {'SLO':<14} {'objective':>9} {'attained':>9} {'budget left':>11}  worst status"]
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
            f"  {slo.request_class:<20} {slo.name:<14} {slo.objective * 100:>8g}% "
            f"{_pct(period.attainment if period else None):>9} "
            f"{_pct(period.budget_remaining if period else None):>11}  {worst}{fired}"
        )
    return rows


def _means(items: list[Signals]) -> tuple[float, dict[str, float | None]]:
    """Requests and mean e2e / queue / prefill / decode seconds over a run of intervals."""
    sums: dict[str, float] = dict.fromkeys(("e2e", "queue", "prefill", "decode"), 0.0)
    counts = dict(sums)
    for sig in items:
        for name in sums:
            h = sig.total.histograms.get(name)
            if h is not None and h.count > 0:
                sums[name] += h.sum
                counts[name] += h.count
    return counts["e2e"], {k: (sums[k] / counts[k] if counts[k] else None) for k in sums}


def latency_lines(history: dict[str, list[Signals]], phases: list[tuple[str, float, float]]) -> list[str]:
    """Where latency went, per endpoint and phase: mean queue / prefill / decode against mean e2e."""
    cols = " ".join(f"{c:>8}" for c in ("requests", "e2e", "queue", "prefill", "decode"))
    rows = [f"  {'endpoint':<16} {'phase':<10} {cols}"]
    for endpoint, items in history.items():
        for phase, start, end in phases:
            count, means = _means([s for s in items if start < s.end <= end])
            cells = " ".join(f"{'-' if v is None else f'{v:.2f}s':>8}" for v in means.values())
            rows.append(f"  {endpoint:<16} {phase.split(':')[0]:<10} {count:>8.0f} {cells}")
    return rows


def write_artifacts(model: Model, out: Path) -> list[str]:
    """Generated rules, dashboards and the report, written into ``out``; returns what was written."""
    from monitor.generate.output import rendered_files, write_files
    from monitor.report import generate as report
    from monitor.report.periods import since

    config = Path(model.source)
    write_files(rendered_files(model, config.name, config.read_text(encoding="utf-8")), out / "generated")
    store = Store(model.storage.url)
    try:
        now = datetime.now(UTC)
        paths = report.write(report.render(report.build(model, store, since("1d", now), now)), out / "report")
    finally:
        store.close()
    return [str(out / "generated"), *(str(p) for p in paths.values())]


def print_summary(
    model: Model, out: Path, phases: list[tuple[str, float, float]], history: dict[str, list[Signals]]
) -> None:
    since = phases[0][1]
    store = Store(model.storage.url)
    try:
        print("\n== SLO status per class (from the store)")
        print("\n".join(slo_table(model, store, since)))
        print(TABLE_NOTE)
    finally:
        store.close()
    print("\n== Where latency went (server-side means per phase)")
    print("\n".join(latency_lines(history, phases)))
    written = write_artifacts(model, out)
    print("\n== Output")
    print(f"  everything is in {out}:")
    print(f"    {out / 'demo-config.yaml'}  (reuse with: m3mon run -c {out / 'demo-config.yaml'})")
    print(f"    {model.storage.url}")
    for path in written:
        print(f"    {path}")
