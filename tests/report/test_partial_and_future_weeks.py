"""The previous week with less history than a week is labelled partial, with its hours; a week that
has not begun is refused (one line, exit 2).

The store's history starts at 2026-11-22 12:00 UTC: the 12 hours before the week 2026-W48 starts
are all of its "last week" (counted here from the probe times written, not by the report)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.model import Model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import generate, periods
from monitor.report.export import render_json
from monitor.report.markdown import render_markdown
from monitor.report.page import render_html
from monitor.store import Store
from monitor.store.ops import Op, probe_op
from tests.report import stores

CONFIG = stores.one_class()
FIRST = datetime(2026, 11, 22, 12, 0, tzinfo=UTC).timestamp()
HOURS = (stores.WEEK.start.timestamp() - FIRST) / 3600  # 12


def _ops(first: float) -> object:
    def ops(model: Model) -> list[Op]:
        out = []
        at = first
        while at <= stores.WEEK.end.timestamp():
            out.append(probe_op(model, ProbeResult("ep", "chat", "chat", at - 1, None, Timings(ttft=0.1, e2e=1.0),
                                                   finished_at=at)))  # fmt: skip
            at += 3 * 3600
        return out

    return ops


def _texts(model: Model, url: str) -> tuple[str, str, str]:
    """The report's Markdown, HTML and JSON (no PDF: it takes seconds and says the same)."""
    store = Store(url)
    try:
        data = generate.build(model, store, stores.WEEK, stores.NOW)
    finally:
        store.close()
    return render_markdown(data), render_html(data), render_json(data)


def test_partial_previous_week_is_labelled_with_its_hours(tmp_path: Path) -> None:
    model, url = stores.stored(tmp_path, CONFIG, _ops(FIRST))  # type: ignore[arg-type]
    md, page, js = _texts(model, url)
    doc = json.loads(js)
    assert doc["previous_week"]["history_seconds"] == pytest.approx(HOURS * 3600)
    label = f"last week (partial: {HOURS:.0f} h of history)"
    assert label in md and label in page
    (reader,) = doc["reader"]
    assert label in reader["text"]
    assert "against last week;" not in reader["text"] and "against last week." not in reader["text"]


def test_whole_previous_week_is_not_partial(tmp_path: Path) -> None:
    model, url = stores.stored(tmp_path, CONFIG, _ops(FIRST - 7 * 86400))  # type: ignore[arg-type]
    md, _, js = _texts(model, url)
    assert json.loads(js)["previous_week"]["history_seconds"] is None
    assert "partial" not in md


@pytest.mark.parametrize(("week", "code"), [("2026-W50", 2), ("2027-W01", 2)])
def test_a_week_that_has_not_begun_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], week: str, code: int
) -> None:
    model, url = stores.stored(tmp_path, CONFIG, lambda m: [])
    out = tmp_path / "out"
    argv = ["report", "-c", model.source, "--week", week, "-o", str(out), "--db", url]
    assert main([*argv, "--now", "2026-12-06T05:22:00+00:00"]) == code
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and week in err and "has not begun" in err
    assert not out.exists() or not list(out.iterdir())


def test_the_current_week_is_reported_to_date() -> None:
    now = datetime(2026, 12, 6, 5, 22, tzinfo=UTC)
    current = periods.iso_week("2026-W49", periods.zone("UTC"))
    assert periods.not_future(current, now) == current
