"""``m3mon demo --history 0`` keeps the live-only demo: no generated history, no maintenance window
in the demo's config, the summary's note for minutes of data, and a report over the last day that
holds only the live run. Phases shortened to 5 s (the run is bounded by the report's rendering)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from sqlalchemy import func, select

from monitor.store import Store
from monitor.store.tables import EventSliceRow, ProbeResultRow, ScrapeIntervalRow

pytestmark = pytest.mark.timeout(200)


def test_history_0_runs_the_live_phases_only(tmp_path: Path) -> None:
    out = tmp_path / "demo-out"
    started = datetime.now().timestamp()
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "demo", "--scale", "0.03", "--history", "0", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = proc.stdout
    assert "== history" not in text and "spooled" not in text
    for heading in ("== healthy", "== incident", "== recovery", "== SLO status per class", "== Output"):
        assert heading in text
    assert "which holds only\n   these minutes of data" in text  # the live-only note, not the history's
    assert "maintenance" not in yaml.safe_load((out / "demo-config.yaml").read_text())
    doc = json.loads((out / "report" / "report.json").read_text())
    start, end = (datetime.fromisoformat(doc["week"][k]).timestamp() for k in ("start", "end"))
    assert doc["week"]["label"].startswith("last 1d") and end - start == 86400 and end >= started
    assert not any(c["before"] == "0.32.1" for d in doc["deployments"] for c in d["changes"])
    assert doc["maintenance"]["occurrences"] == []
    store = Store(f"sqlite:///{out / 'db' / 'm3mon.db'}")
    try:
        with store.session() as s:  # everything stored was measured during this run
            oldest = [s.scalar(select(func.min(c))) for c in (ProbeResultRow.started_at, ScrapeIntervalRow.end,
                                                              EventSliceRow.end)]  # fmt: skip
    finally:
        store.close()
    assert all(t is None or t >= started - 60 for t in oldest), (started, oldest)
