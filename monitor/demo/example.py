"""A synthetic but realistic week in a throwaway store, for the example images and the benchmark.

``python -m monitor.demo.example OUT_DIR [--classes N]`` builds the store, writes the four
report files and, where Chromium and pdftoppm exist, ``report-screenshot.png`` and the PDF's
first pages (``report-page-N.png``). The data is seeded, so the same command gives the same report.
"""

from __future__ import annotations

import argparse
import random
import shutil
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert

from monitor import conventions as cv
from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import generate, periods, preview
from monitor.scrape.signals import EngineSignals, Histogram, Signals
from monitor.store import DeploymentFingerprint, Store
from monitor.store.migrate import upgrade
from monitor.store.ops import (
    Op,
    alertmanager_op,
    deployment_op,
    endpoints_op,
    probe_op,
    signals_op,
    write_slices,
)
from monitor.store.tables import ProbeResultRow, ScrapeIntervalRow

WEEK = "2026-W48"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
NAMES = ("interactive-32k", "agent", "repo-analysis-128k", "multimodal", "extended-context")
TTFT_EDGES = (0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, float("inf"))


def config(classes: int) -> str:
    """An m3mon/v1 config with ``classes`` request classes on one endpoint per two classes."""
    names = [NAMES[i] if i < len(NAMES) else f"class-{i:02d}" for i in range(classes)]
    eps = [f"m3-pool-{i // 2}" for i in range(classes)]
    lines = ["version: m3mon/v1", "endpoints:"]
    for ep in dict.fromkeys(eps):
        served = ", ".join(n for n, e in zip(names, eps, strict=True) if e == ep)
        lines.append(
            f"  - {{name: {ep}, base_url: 'http://127.0.0.1:9', backend: vllm, model: m3, "
            f"classes: [{served}]}}"
        )
    lines.append("request_classes:")
    for i, n in enumerate(names):
        objective = 99.5 if i % 2 else 99.9
        lines += [
            f"  - name: {n}",
            "    max_context_tokens: 32768",
            "    probes: [chat, agent_session]",
            "    slos:",
            f"      - {{name: availability, sli: availability, objective: {objective}, source: probes}}",
            "      - {name: ttft-p95, sli: ttft, threshold: 2.5s, objective: 95, source: server}",
            "      - {name: e2e-p95, sli: e2e, threshold: 20s, objective: 95, source: probes}",
        ]
    lines += ["report: {timezone: UTC, recipients: [sre@example.com]}", ""]
    return "\n".join(lines)


def _probe(rng: random.Random, ep: str, cls: str, at: float, slow: float, failed: bool) -> ProbeResult:
    kind = "agent_session" if int(at) % 3600 == 0 else "chat"
    if failed:
        return ProbeResult(ep, cls, kind, at, "timeout", detail="no first token within 60s")
    ttft = rng.lognormvariate(-0.9, 0.5) * slow
    decode = rng.uniform(2.0, 6.0) * slow
    tools = (rng.uniform(0.15, 0.4), rng.uniform(0.15, 0.4)) if kind == "agent_session" else ()
    itl = rng.uniform(0.015, 0.04) * slow
    spread = tuple(itl * f for f in (0.6, 0.8, 0.9, 1.0, 1.0, 1.1, 1.2, 1.4))  # no draws: same sequence
    t = Timings(ttft=ttft, itl_mean=itl, itl_samples=spread * 8, e2e=ttft + decode + sum(tools),
                server_queue=ttft * 0.2, server_prefill=ttft * 0.6, server_decode=decode, network=ttft * 0.2,
                tool_turnaround=tools)  # fmt: skip
    return ProbeResult(ep, cls, kind, at, None, t)


def _interval(rng: random.Random, ep: str, end: float, busy: float) -> Signals:
    n = 400.0
    fast = [min(1.0, max(0.0, rng.gauss(c, 0.01))) for c in (0.2, 0.5, 0.7, 0.85, 0.965, 0.99, 0.995, 0.998)]
    counts = (*(float(round(n * f)) for f in sorted(fast)), n - 2, n - 1, n)
    eng = EngineSignals(
        finished={"stop": n},
        histograms={"ttft": Histogram(TTFT_EDGES, counts, n * 0.9, n)},
        preemptions=float(rng.random() < 0.05 * busy),
        waiting=float(rng.randint(0, int(8 * busy))),
        kv_cache_usage=min(0.99, rng.uniform(0.3, 0.8) * busy),
    )
    return Signals(
        ep, "vllm", "vllm-v1-engine", "MiniMaxAI/MiniMax-M3", end, end - 3600, False, {"0": eng}, eng
    )


def _incident(cls: str, start: float, end: float) -> Op:
    iso = "%Y-%m-%dT%H:%M:%SZ"
    labels = {"alertname": cv.ALERT_BURN_PAGE, "class": cls, "slo": "availability", "severity": "page"}
    alert = {
        "status": "resolved",
        "fingerprint": f"fp-{cls}",
        "labels": labels,
        "startsAt": datetime.fromtimestamp(start, UTC).strftime(iso),
        "endsAt": datetime.fromtimestamp(end, UTC).strftime(iso),
        "annotations": {"summary": f"{cls} availability is burning its error budget 14.4x too fast"},
    }
    return alertmanager_op({"version": "4", "status": "resolved", "alerts": [alert]}, end)


def fill(model: Model, store: Store, seed: int = 48) -> None:
    """Write 37 days of probes (every 30 min per class), a week of scrapes, one incident, one deploy."""
    rng = random.Random(seed)
    week = periods.iso_week(WEEK, periods.zone("UTC"))
    end = week.end.timestamp()
    incident = (end - 4.6 * 86400, end - 4.6 * 86400 + 5400)
    probes, scrapes = [], []
    for i, rc in enumerate(model.classes):
        ep = model.endpoints_for(rc.name)[0].name
        slow = 1.0 + 0.35 * (i % 4)
        for k in range(37 * 48):
            at = end - k * 1800
            failed = (i == 1 and incident[0] < at <= incident[1]) or rng.random() < 0.0004
            probes.append(probe_op(model, _probe(rng, ep, rc.name, at, slow, failed)))
    for j, ep in enumerate(e.name for e in model.endpoints):
        scrapes += [
            signals_op(model, ep, _interval(rng, ep, end - h * 3600, 1.0 + 0.2 * j)) for h in range(168)
        ]
    ops = [
        endpoints_op(model.endpoints),
        _incident(model.classes[min(1, len(model.classes) - 1)].name, *incident),
    ]
    ep0 = model.endpoints[0].name
    ops.append(
        deployment_op(
            ep0, DeploymentFingerprint(vllm_version="0.11.0", max_model_len=32768), end - 20 * 86400
        )
    )
    ops.append(
        deployment_op(
            ep0, DeploymentFingerprint(vllm_version="0.11.1", max_model_len=65536), end - 3.5 * 86400
        )
    )
    store.apply(ops)
    with store.session() as session:
        session.execute(insert(ProbeResultRow), [o["row"] for o in probes])
        session.execute(insert(ScrapeIntervalRow), [o["row"] for o in scrapes])
        write_slices(session, [s for o in probes + scrapes for s in o["slices"]])


def build_store(directory: Path, classes: int) -> tuple[Model, Store]:
    """A fresh config and SQLite store under ``directory``, filled with the synthetic week."""
    directory.mkdir(parents=True, exist_ok=True)
    cfg = directory / "monitor.yaml"
    cfg.write_text(config(classes))
    model = load_model(cfg)
    db = directory / "example.db"
    db.unlink(missing_ok=True)
    upgrade(f"sqlite:///{db}")
    store = Store(f"sqlite:///{db}")
    fill(model, store)
    return model, store


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out", type=Path)
    p.add_argument("--classes", type=int, default=5)
    args = p.parse_args(argv)
    model, store = build_store(args.out / "store", args.classes)
    try:
        data = generate.build(model, store, periods.iso_week(WEEK, periods.zone("UTC")), NOW)
    finally:
        store.close()
    rendered = generate.render(data)
    paths = generate.write(rendered, args.out)
    chromium, pdftoppm = shutil.which("chromium"), shutil.which("pdftoppm")
    if chromium:
        preview.screenshot(chromium, paths["report.html"], args.out / "report-screenshot.png")
    if pdftoppm:
        for page in preview.pdf_pages(pdftoppm, paths["report.pdf"], args.out / "report-page"):
            print(page)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
