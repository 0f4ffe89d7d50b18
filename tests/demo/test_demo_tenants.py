"""The demo's tenants on a short demo history: its report has a Tenants section where the mix's
slow tenant is the worst and misses its goodput objective while the heavy tenants meet theirs, and
a per-tenant tail that gives the slow tenant's end-to-end tail to decoding (:mod:`tests.demo.tenants`,
an oracle from the simulator's tenant mix). The full demo is checked the same way in test_demo.py."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.cli.demo import EXAMPLE
from monitor.demo.config import demo_config, demo_database, write_demo_config
from monitor.demo.history import history_end, write_demo_history
from monitor.demo.summary import report_period
from monitor.model import load_model
from monitor.report.export import to_dict
from monitor.report.generate import build
from monitor.store import Store
from monitor.store.migrate import upgrade
from tests.demo.tenants import check_tenants

pytestmark = pytest.mark.timeout(120)
DAYS = 0.5


def test_a_short_demo_history_tells_the_tenants_story(tmp_path: Path) -> None:
    out = tmp_path / "demo-out"
    demo_database(out).parent.mkdir(parents=True)
    example = load_model(EXAMPLE)
    urls = {e.name: f"http://127.0.0.1:{9 + i}" for i, e in enumerate(example.endpoints)}
    write_demo_config(demo_config(EXAMPLE, out, urls, 9), out / "demo-config.yaml")
    model = load_model(out / "demo-config.yaml")
    upgrade(model.storage.url)
    end = history_end()
    hist = write_demo_history(model, example, demo_database(out), out / "history-spool", DAYS, end)
    now = datetime.fromtimestamp(end + 60, UTC)
    store = Store(model.storage.url)
    try:
        doc = to_dict(build(model, store, report_period(hist.scenario.start, now), now))
    finally:
        store.close()
    check_tenants(doc)
