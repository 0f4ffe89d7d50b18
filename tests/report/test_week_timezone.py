"""``slo status --week`` and the report's "this week" in a timezone that is not UTC.

Issue 24, finding 5: the report's ISO week starts on Monday 00:00 in ``report.timezone`` while
``slo status --week`` always took Monday 00:00 UTC, yet both said they counted the same events.

The store holds one chat probe an hour at HH:10 UTC from 20 Nov to 2 Dec 2026; report.timezone
is Asia/Kolkata (UTC+5:30, no DST), so the week 2026-W48 runs from Mon 23 Nov 00:00 IST = Sun
22 Nov 18:30 UTC to Mon 30 Nov 00:00 IST = Sun 29 Nov 18:30 UTC. Two probes failed just after
local midnight's start of the week (22 Nov 19:10 and 20:10 UTC: inside the local week, before
the UTC week), three just after its end (29 Nov 19:10, 20:10, 21:10 UTC: after the local week,
inside the UTC week). Counted by hand in the local week: the probes of 22 Nov 19:10 through 29 Nov
18:10 UTC, 7 × 24 = 168, two failed: 166 / 168 (the UTC week would be 165 / 168).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.history.write import apply_bulk, finish
from monitor.model import load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import generate, periods
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op
from tests.report import stores

CONFIG = stores.one_class("Asia/Kolkata")
FIRST = datetime(2026, 11, 20, 0, 10, tzinfo=UTC).timestamp()
HOUR = 3600.0
FAILED = {datetime(2026, 11, d, h, 10, tzinfo=UTC).timestamp() for d, h in ((22, 19), (22, 20), (29, 19), (29, 20), (29, 21))}  # fmt: skip


def _probe(at: float) -> ProbeResult:
    failed = at in FAILED
    timings = Timings() if failed else Timings(ttft=0.1, e2e=1.0)
    return ProbeResult("ep", "chat", "chat", at - 1.0, "timeout" if failed else None, timings, finished_at=at)


def test_slo_status_week_and_the_report_count_the_local_week(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(CONFIG)
    model = load_model(cfg)
    url = f"sqlite:///{tmp_path / 'week.db'}"
    upgrade(url)
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints)])
        apply_bulk(store, [probe_op(model, _probe(FIRST + k * HOUR)) for k in range(12 * 24)])
        finish(store)
        week = periods.iso_week("2026-W48", periods.zone(model.report.timezone))
        data = generate.build(model, store, week, datetime(2026, 12, 2, tzinfo=UTC))
    finally:
        store.close()
    ((line,),) = [c.slos for c in data.classes]
    assert (line.good, line.total) == (166, 168) and line.attainment == pytest.approx(166 / 168)
    assert data.week.definition.endswith("counts the same events (in Asia/Kolkata)")

    monkeypatch.setenv("M3MON_STORAGE_URL", url)
    assert main(["slo", "status", "-c", str(cfg), "--week", "2026-W48", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["at"] == datetime(2026, 11, 29, 18, 30, tzinfo=UTC).timestamp()  # Monday 00:00 IST
    assert doc["week_definition"] == "week: the ISO week (Monday 00:00 Asia/Kolkata) up to the status time"
    ((e,),) = [[w for w in ev["windows"] if w["window"] == "week"] for ev in doc["evaluations"]]
    assert (e["good"], e["total"], e["attainment"]) == (line.good, line.total, line.attainment)

    # without --week the column is the local ISO week to date: at 29 Nov 18:00 UTC (23:30 IST,
    # still Sunday) the probes of 22 Nov 19:10 through 29 Nov 17:10 UTC, 167, two failed
    assert main(["slo", "status", "-c", str(cfg), "--at", "2026-11-29T18:00:00Z", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ((e,),) = [[w for w in ev["windows"] if w["window"] == "week"] for ev in doc["evaluations"]]
    assert (e["good"], e["total"]) == (165, 167)
