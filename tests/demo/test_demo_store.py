"""The demo's store compaction keeps what the report reads: the report built from ten and a half days of
demo history is the same before and after :func:`monitor.demo.compact.compact`, which removed
rows and made the file smaller."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from monitor.cli.demo import EXAMPLE
from monitor.demo.compact import compact
from monitor.demo.config import demo_config, demo_database, write_demo_config
from monitor.demo.history import history_end, planned_upgrade, write_demo_history
from monitor.demo.summary import report_period
from monitor.model import Model, load_model
from monitor.report.data import Period
from monitor.report.export import to_dict
from monitor.report.generate import build
from monitor.store import Store
from monitor.store.migrate import upgrade

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
DAYS = 10.5


def _report(model: Model, period: Period, now: datetime) -> dict[str, Any]:
    store = Store(model.storage.url)
    try:
        return to_dict(build(model, store, period, now))
    finally:
        store.close()


def test_compaction_leaves_the_report_unchanged_and_the_file_smaller(tmp_path: Path) -> None:
    out = tmp_path / "demo-out"
    demo_database(out).parent.mkdir(parents=True)
    example = load_model(EXAMPLE)
    urls = {e.name: f"http://127.0.0.1:{9 + i}" for i, e in enumerate(example.endpoints)}
    cfg = demo_config(EXAMPLE, out, urls, 9)
    end = history_end()
    cfg["maintenance"] = [planned_upgrade(end, DAYS)]
    write_demo_config(cfg, out / "demo-config.yaml")
    model = load_model(out / "demo-config.yaml")
    upgrade(model.storage.url)
    hist = write_demo_history(model, example, demo_database(out), out / "history-spool", DAYS, end)
    now = datetime.fromtimestamp(end + 60, UTC)
    period = report_period(hist.scenario.start, now)
    assert period.seconds == 7 * 86400  # the report's week and the days before it
    before = _report(model, period, now)
    done = compact(model.storage.url, period.start.timestamp())
    assert min(done.probe_results, done.server_spans, done.event_slices, done.evaluations) > 0, done
    assert done.after < done.before
    assert _report(model, period, now) == before
