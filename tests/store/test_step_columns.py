"""A step evaluated column-wise (:mod:`monitor.slo.columns`) against the per-window definition.

For random SLOs (objectives, periods, guards, ``page_within``) and random window counts (no
events, all good, all bad, guards just met or missed), every evaluation of
:func:`~monitor.slo.columns.evaluate_columns` equals :func:`~monitor.slo.evaluate.evaluate_counts`
of its SLO over the same counts (status, severity, every window's numbers); its stored rows are
:func:`~monitor.store.ops.evaluation_row`'s, and read back from the store (both dialects) as the
same evaluations.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.model import SLO
from monitor.slo.columns import Floats, evaluate_columns
from monitor.slo.evaluate import evaluate_counts
from monitor.store import Store
from monitor.store.ops import evaluation_row
from monitor.store.upsert import plain

AT = 1_770_684_060.0
DAY = 86400.0


class Counts:
    """Window counts from a table: (SLO id, window start) -> (good, total)."""

    def __init__(self, table: dict[tuple[str, float], tuple[float, float]]) -> None:
        self.table = table

    def __call__(self, slo_id: str, start: float, end: float) -> tuple[float, float]:
        assert end == AT
        return self.table[(slo_id, start)]

    def columns(self, slo_ids: Sequence[str], starts: Sequence[float], end: float) -> tuple[Floats, Floats]:
        pairs = [[self(s, w, end) for w in starts] for s in slo_ids]
        arr = np.array(pairs, dtype=np.float64).reshape(len(slo_ids), len(starts), 2)
        return arr[..., 0], arr[..., 1]


@st.composite
def slos(draw: st.DrawFn) -> list[SLO]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        objective = draw(st.sampled_from([0.9, 0.95, 0.99, 0.995, 0.999, 0.9999]))
        period = draw(st.sampled_from([28 * DAY, 30 * DAY]))
        guard = draw(st.sampled_from([None, 0, 1, 7, 50]))
        within = draw(st.sampled_from([None, 120.0, 3600.0]))
        out.append(SLO(f"c{i % 2}", f"s{i}", "availability", objective, period, "server",
                       min_events=guard, page_within=within))  # fmt: skip
    return out


def _counts(draw: st.DrawFn, slo_list: list[SLO]) -> Counts:
    from monitor.slo.windows import windows_at

    table = {}
    for slo in slo_list:
        for w in windows_at(slo, AT):
            total = float(draw(st.sampled_from([0, 1, 2, 7, 49, 50, 51, 1000, 86400])))
            bad = draw(st.sampled_from([0.0, 1.0, total / 2, total, float(draw(st.integers(0, int(total))))]))
            table[(slo.id, w.start)] = (total - min(bad, total), total)
    return Counts(table)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_columns_equal_the_per_window_evaluator(data: st.DataObject) -> None:
    slo_list = data.draw(slos())
    counts = _counts(data.draw, slo_list)
    step = evaluate_columns(slo_list, AT, counts)
    assert len(step) == len(slo_list)
    expected = [evaluate_counts(s, AT, counts) for s in slo_list]
    by_id = {e.slo_id: e for e in step}
    assert [by_id[e.slo_id] for e in expected] == expected
    assert list(step) == [step[i] for i in range(len(step))]
    # the stored rows' JSON, byte for byte (PostgreSQL's path serializes the arrays as they are;
    # SQLite's as plain lists)
    rows = sorted(step.rows(), key=lambda r: r["slo_id"])
    want = orjson.dumps(sorted((evaluation_row(e) for e in expected), key=lambda r: r["slo_id"]))
    assert orjson.dumps(rows, option=orjson.OPT_SERIALIZE_NUMPY) == want
    assert orjson.dumps([plain(r) for r in rows]) == want


def test_stored_step_reads_back_the_same(store: Store) -> None:
    """Rows built from the columns are stored and read back as the evaluations (both dialects)."""
    slo_list = [
        SLO("chat", "availability", "availability", 0.999, 30 * DAY, "server"),
        SLO("chat", "quiet", "availability", 0.99, 28 * DAY, "server"),
        SLO("repo", "burning", "availability", 0.95, 30 * DAY, "server", min_events=1),
    ]
    from monitor.slo.windows import windows_at

    short = {"5m", "30m", "1h", "2h", "6h"}  # the third SLO's last hours went bad: it burns
    table = {}
    for k, slo in enumerate(slo_list):
        for w in windows_at(slo, AT):
            burn = (1.0, 10.0) if w.name in short else (1e6 - 10, 1e6)
            table[(slo.id, w.start)] = [(1e6 - 3, 1e6), (0.0, 0.0), burn][k]
    step = evaluate_columns(slo_list, AT, Counts(table))
    assert {e.status for e in step} == {"ok", "no data", "burning"}
    store.save_evaluations(step)
    assert store.latest_evaluations() == sorted(step, key=lambda e: e.slo_id)
