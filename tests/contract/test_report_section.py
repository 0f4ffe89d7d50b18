"""The weekly report carries the operating contract: built from a store holding replay evidence,
its Markdown, JSON and HTML each have the contract section with the stored capacity."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from monitor.report import generate, periods
from monitor.report.export import render_json
from monitor.report.markdown import render_markdown
from monitor.report.page import render_html
from monitor.store.store import Store
from tests.contract.store import NEW, add_rows, model_of, run_of

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


def test_the_weekly_report_has_the_contract_section(tmp_path: Path) -> None:
    model = model_of(tmp_path)
    t = NOW.timestamp()
    # held at 2/s, failed at 5/s on the deployment the collector saw last
    add_rows(model, deployments=[(NEW, t - 7200), (NEW, t - 60)],
             runs=[run_of(NEW, t - 3600, 2, True), run_of(NEW, t - 3000, 5, False)])  # fmt: skip
    store = Store(model.storage.url)
    try:
        data = generate.build(model, store, periods.since("7d", NOW), NOW)
    finally:
        store.close()

    md = render_markdown(data)
    section = md[md.index("## Operating contract") :]
    assert "### small (on pool)" in section
    assert (
        "* **Warm capacity**: SLOs hold up to 2 req/s (rate, 2 run(s); an SLO failed at 5 req/s)" in section
    )
    assert "KV-cache dtype: fp8" in section and "vLLM: 0.33.0" in section
    assert f"(deployment fingerprint {NEW.digest[:12]})" in section and "P95 TTFT ≤ 0.5 s" in section

    (entry,) = json.loads(render_json(data))["contract"]
    assert entry["name"] == "small" and entry["endpoint"] == "pool"
    assert entry["capacity"] == {"load_kind": "rate", "holds_at": 2.0, "fails_at": 5.0, "runs": 2}
    assert entry["fingerprint_digest"] == NEW.digest and entry["stale"] is None

    page = render_html(data)
    assert '<section class="contract"><h2>Operating contract</h2>' in page
    assert "SLOs hold up to 2 req/s" in page
