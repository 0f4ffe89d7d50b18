"""Gaps are drawn as gaps: a class probed every 10 minutes for two days, except for twelve hours in
the middle (hours 18 to 30) when nothing ran. The report's points in those steps carry no events,
and its charts draw neither a line through the hole nor a drop to 0 there; either side, the lines
are drawn (read from the chart's pixels, tests/report/lines.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import insert

from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import charts, generate
from monitor.report.data import Period, ReportData, SeriesPoint, SLOSeries
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op, write_slices
from monitor.store.tables import ProbeResultRow
from tests.report import lines

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: MiniMaxAI/MiniMax-M3, classes: [chat]}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: availability, sli: availability, objective: 99, source: probes}
      - {name: ttft-p95, sli: ttft, threshold: 2s, objective: 95, source: probes}
storage: {url: "sqlite:///unused.db"}
"""
T0 = datetime(2026, 11, 23, tzinfo=UTC).timestamp()  # a Monday
HOUR = 3600.0
GAP = (T0 + 18 * HOUR, T0 + 30 * HOUR)  # no probe ran in (18 h, 30 h]
END = T0 + 48 * HOUR


@dataclass(frozen=True)
class Gapped:
    data: ReportData


def _probe(at: float, k: int) -> ProbeResult:
    failed = k % 25 == 0  # one in 25 fails: attainment and budget move, the lines are not flat
    timings = Timings() if failed else Timings(ttft=0.4 + 0.1 * (k % 3), e2e=3.0, server_queue=0.05,
                                               server_prefill=0.3, server_decode=2.5, network=0.05)  # fmt: skip
    return ProbeResult("ep", "chat", "chat", at - 3.0, "timeout" if failed else None, timings, finished_at=at)


def _write(model: Model, url: str) -> None:
    at, k, probes = T0 + 600.0, 0, []
    while at <= END:
        if not GAP[0] < at <= GAP[1]:
            probes.append(probe_op(model, _probe(at, k)))
            k += 1
        at += 600.0
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints)])
        with store.session() as session:  # in bulk: the rows and slices the per-result ops write
            session.execute(insert(ProbeResultRow), [o["row"] for o in probes])
            write_slices(session, [s for o in probes for s in o["slices"]])
    finally:
        store.close()


@pytest.fixture(scope="module")
def gapped(tmp_path_factory: pytest.TempPathFactory) -> Gapped:
    tmp: Path = tmp_path_factory.mktemp("gaps")
    (tmp / "monitor.yaml").write_text(CONFIG)
    model = load_model(tmp / "monitor.yaml")
    url = f"sqlite:///{tmp / 'gaps.db'}"
    upgrade(url)
    _write(model, url)
    store = Store(url)
    end = datetime.fromtimestamp(END, UTC)
    try:
        data = generate.build(model, store, Period("two days", datetime.fromtimestamp(T0, UTC), end), end)
    finally:
        store.close()
    return Gapped(data)


def test_the_steps_without_probes_hold_no_events(gapped: Gapped) -> None:
    assert gapped.data.series_step_seconds == HOUR  # 48 hours in at most 60 points
    for s in gapped.data.series:
        inside = [p for p in s.points if GAP[0] < p.at.timestamp() <= GAP[1]]
        outside = [p for p in s.points if not GAP[0] < p.at.timestamp() <= GAP[1]]
        assert len(inside) == 12 and all(p.events == 0 for p in inside), s.slo
        assert len(outside) >= 35 and all(p.events > 0 for p in outside), s.slo  # 6 probes an hour


def _columns(box: lines.Box, a: float, b: float) -> set[int]:
    """The panel's columns between the shares ``a`` and ``b`` of its width."""
    return set(range(round(a * box.width), round(b * box.width)))


# The hole is hours 18-30 of 48: with the axis fitted to the data (±1 % and a step), the columns at
# 42-58 % of the width lie inside it, those at 5-33 % and 67-95 % well outside.
HOLE, BEFORE, AFTER = (0.42, 0.58), (0.05, 0.33), (0.67, 0.95)


def test_the_burn_down_chart_breaks_its_lines_at_the_hole(gapped: Gapped) -> None:
    png = charts.burn_down(gapped.data.series)
    assert png is not None
    img = lines.pixels(png)
    (panels,) = lines.burn_panels(img)
    for box in panels:  # attainment, then budget
        drawn = lines.line_columns(img, box, list(charts.PALETTE[:2]))
        assert not drawn & _columns(box, *HOLE), "a line is drawn through the hole (or down to 0)"
        for side in (BEFORE, AFTER):
            want = _columns(box, *side)
            assert len(drawn & want) > 0.9 * len(want)


def test_the_breakdown_chart_leaves_the_hole_empty(gapped: Gapped) -> None:
    png = charts.breakdown_over_time(gapped.data.breakdown_series)
    assert png is not None
    img = lines.pixels(png)
    ((box,),) = lines.frames(img)  # one class, one panel
    inside = img[box.top : box.bottom + 1, box.left : box.right + 1]
    filled = np.any(lines.colour_mask(inside, list(charts.PALETTE[:5])), axis=0).tolist()  # an area
    hole, before, after = (_columns(box, *x) for x in (HOLE, BEFORE, AFTER))
    assert not any(filled[c] for c in hole)
    for side in (before, after):  # (the vertical grid lines are drawn over the areas)
        assert sum(filled[c] for c in side) > 0.9 * len(side)


def test_a_dip_below_the_budget_floor_runs_along_it_not_off_the_chart() -> None:
    """Budget 100 % for 20 h, -1,300 % for 10 h, then -900 % to the end: the axis keeps the end
    (floor 1.2 x -900 = -1,080 %), so the dip is below it. The line is drawn along the floor there
    (a break would read as steps without events; the chart also writes the lowest value)."""
    t0 = datetime.fromtimestamp(T0, UTC)
    budget = [100.0] * 20 + [-1300.0] * 10 + [-900.0] * 18
    points = tuple(
        SeriesPoint(t0 + timedelta(hours=h), 0.5, b / 100, events=10.0) for h, b in enumerate(budget)
    )
    png = charts.burn_down([SLOSeries("chat", "availability", 0.99, points)])
    assert png is not None
    img = lines.pixels(png)
    ((_, box),) = lines.burn_panels(img)
    drawn = lines.line_columns(img, box, list(charts.PALETTE[:1]))
    dip = _columns(box, 22 / 47, 28 / 47)
    assert dip <= drawn, "the dip below the floor is not drawn"
    assert lines.coverage(img, box, list(charts.PALETTE[:1])) > 0.9
