"""The report's Maintenance section, from a store written through the store's own ops.

Probes every 30 minutes over 2026-W48 (UTC) for ``chat`` on ep-a and ep-b and for ``agent`` on
ep-a; each probe is one event of every SLO of its class, ending at its finish time. The
maintenance calendar marks the slices (the store's real path, :func:`monitor.store.ops.probe_op`);
the hand-computed answers, with the report made at ``--now`` Sun 2026-11-29 04:00 UTC:

* ``sunday-kernel``: weekly, Sundays 04:00 Europe/Berlin for 2h, class chat, first run
  2026-10-18 (CEST). On Sun 2026-11-29 (CET, UTC+1) it runs (03:00, 05:00] UTC: in progress at
  04:00. Up to 04:00 the probes ending 03:30 and 04:00 on both endpoints are excluded: chat 4 per SLO.
* ``db-migration``: Wed 2026-11-25 10:00 UTC for 90m on ep-a (chat and agent): probes ending
  10:30, 11:00, 11:30: chat 3 and agent 3 per SLO. Past.
* ``ep-b-swap``: Sun 2026-11-29 20:00 UTC for 1h on ep-b: planned, nothing excluded yet.
* ``old-window``: Tue 2026-11-24 00:00 UTC for 1h, class agent, configured when the probes were
  stored but no longer when the report is made: probes ending 00:30 and 01:00: agent 2 (listed apart).

SLO totals up to --now (148 hours = 296 probes per class and endpoint): chat 592 - 4 - 3 = 585,
agent 296 - 3 - 2 = 291.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert

from monitor.config import parse_config
from monitor.model import Model, build_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import generate, periods
from monitor.report.data import ReportData
from monitor.report.export import render_json
from monitor.report.markdown import render_markdown
from monitor.report.page import render_html
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op, write_slices
from monitor.store.tables import ProbeResultRow

START = datetime(2026, 11, 23, tzinfo=UTC).timestamp()
NOW = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep-a, base_url: "http://127.0.0.1:9", model: m3, classes: [chat, agent]}
  - {name: ep-b, base_url: "http://127.0.0.1:10", model: m3, classes: [chat]}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: availability, sli: availability, objective: 99, source: probes}
      - {name: ttft-p95, sli: ttft, threshold: 2.5s, objective: 95, source: probes}
  - name: agent
    max_context_tokens: 32768
    probes: [chat]
    slos: [{name: availability, sli: availability, objective: 99, source: probes}]
report: {timezone: UTC}
maintenance:
  - {name: sunday-kernel, start: "2026-10-18T04:00:00", duration: 2h, rrule: "FREQ=WEEKLY;BYDAY=SU",
     timezone: Europe/Berlin, classes: [chat], reason: "kernel <b>upgrade</b> | node pool"}
  - {name: db-migration, start: "2026-11-25T10:00:00Z", duration: 90m, endpoints: [ep-a], reason: schema v7}
  - {name: ep-b-swap, start: "2026-11-29T20:00:00Z", end: "2026-11-29T21:00:00Z", endpoints: [ep-b]}
"""
OLD_WINDOW = '  - {name: old-window, start: "2026-11-24T00:00:00Z", duration: 1h, classes: [agent]}\n'


def _model(text: str, url: str) -> Model:
    return build_model(parse_config(text + f"storage: {{url: '{url}'}}\n"))


def _probe(endpoint: str, cls: str, at: float) -> ProbeResult:
    timings = Timings(ttft=0.4, itl_mean=0.02, itl_samples=(0.02,) * 4, e2e=2.0)
    return ProbeResult(endpoint, cls, "chat", at - 2.0, None, timings, finished_at=at)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Model, str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('maint-report') / 'm3mon.db'}"
    upgrade(url)
    then = _model(CONFIG + OLD_WINDOW, url)  # the calendar in force when the probes ran
    ops = [
        probe_op(then, _probe(ep, cls, START + k * 1800))
        for k in range(1, 337)
        for ep, cls in (("ep-a", "chat"), ("ep-b", "chat"), ("ep-a", "agent"))
    ]
    store = Store(url)
    try:  # in bulk: the rows and slices the per-result ops write (as tests/report/week.py)
        store.apply([endpoints_op(then.endpoints)])
        with store.session() as session:
            session.execute(insert(ProbeResultRow), [o["row"] for o in ops])
            write_slices(session, [s for o in ops for s in o["slices"]])
    finally:
        store.close()
    return _model(CONFIG, url), url


@pytest.fixture(scope="module")
def week48(data: tuple[Model, str]) -> ReportData:
    return _build(*data, "2026-W48")


def _build(model: Model, url: str, week: str, now: datetime = NOW) -> ReportData:
    store = Store(url)
    try:
        return generate.build(model, store, periods.iso_week(week, periods.zone("UTC")), now)
    finally:
        store.close()


def test_occurrences_states_and_excluded_counts(week48: ReportData) -> None:
    d = week48
    got = [
        (m.window, m.applies_to, m.start.isoformat(), m.end.isoformat(), m.state, m.shown)
        for m in d.maintenance.lines
    ]
    assert got == [
        ("db-migration", "endpoints ep-a", "2026-11-25T10:00:00+00:00", "2026-11-25T11:30:00+00:00", "past",
         "chat: availability 3, ttft-p95 3; agent: availability 3"),
        ("sunday-kernel", "classes chat", "2026-11-29T03:00:00+00:00", "2026-11-29T05:00:00+00:00",
         "in progress", "chat: availability 4, ttft-p95 4"),
        ("ep-b-swap", "endpoints ep-b", "2026-11-29T20:00:00+00:00", "2026-11-29T21:00:00+00:00", "planned", "—"),
    ]  # fmt: skip
    assert [(w, e.request_class, e.slo, e.events) for w, e in d.maintenance.unlisted] == [
        ("old-window", "agent", "availability", 2.0)
    ]
    totals = {(c.name, s.slo): s.total for c in d.classes for s in c.slos}
    assert totals == {
        ("chat", "availability"): 585,
        ("chat", "ttft-p95"): 585,
        ("agent", "availability"): 291,
    }


def test_rendered_in_markdown_html_and_json(week48: ReportData) -> None:
    d = week48
    md = render_markdown(d)
    assert "## Maintenance" in md
    assert (
        "| sunday-kernel | classes chat | 2026-11-29 03:00 | 2026-11-29 05:00 | 2h 00m | in progress | "
        "kernel &lt;b&gt;upgrade&lt;/b&gt; \\| node pool | chat: availability 4, ttft-p95 4 |"
    ) in md
    assert "Also excluded, by windows no longer configured: old-window: agent: availability 2." in md
    html = render_html(d)
    assert "<h2>Maintenance</h2>" in html and "kernel &lt;b&gt;upgrade&lt;/b&gt; | node pool" in html
    assert "<b>upgrade</b>" not in html
    doc = json.loads(render_json(d))["maintenance"]
    assert doc["occurrences"][0] == {
        "window": "db-migration", "classes": [], "endpoints": ["ep-a"],
        "start": "2026-11-25T10:00:00+00:00", "end": "2026-11-25T11:30:00+00:00", "duration_seconds": 5400.0,
        "state": "past", "reason": "schema v7",
        "excluded": [{"class": "chat", "slo": "availability", "events": 3.0},
                     {"class": "chat", "slo": "ttft-p95", "events": 3.0},
                     {"class": "agent", "slo": "availability", "events": 3.0}],
    }  # fmt: skip
    assert doc["unlisted"] == [
        {"window": "old-window", "class": "agent", "slo": "availability", "events": 2.0}
    ]


def test_a_week_without_maintenance_says_so(data: tuple[Model, str]) -> None:
    # 2026-W41 (Oct 5-12) ends before the weekly window's first run on Oct 18; the store has nothing then
    d = _build(*data, "2026-W41", datetime(2026, 11, 1, tzinfo=UTC))
    assert d.maintenance.lines == () and d.maintenance.unlisted == ()
    assert "## Maintenance\n\nNo maintenance this week.\n" in render_markdown(d)
    assert "<p>No maintenance this week.</p>" in render_html(d)


def test_events_after_now_are_not_counted(data: tuple[Model, str]) -> None:
    # at --now 03:30 the sunday run is half an hour old: only the probes ending 03:30 (one per endpoint)
    earlier = _build(*data, "2026-W48", datetime(2026, 11, 29, 3, 30, tzinfo=UTC))
    line = next(m for m in earlier.maintenance.lines if m.window == "sunday-kernel")
    assert line.state == "in progress" and line.shown == "chat: availability 2, ttft-p95 2"
    assert render_markdown(earlier) == render_markdown(
        _build(*data, "2026-W48", datetime(2026, 11, 29, 3, 30, tzinfo=UTC))
    )
