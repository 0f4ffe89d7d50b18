"""A generated day of history: what it wrote, checked against the store's raw rows and its own
counting, the story's events, the spooled outage and the evaluator."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select

from monitor.history import History, folder_outage, write_history
from monitor.history.evaluate import HISTORY_STEP, SliceCounter, instants
from monitor.history.generate import _draw
from monitor.history.pool import make_pool
from monitor.history.scenario import scenario
from monitor.model import Model, load_model
from monitor.slo.evaluate import evaluate_counts
from monitor.store import Store
from monitor.store.evaluations import window_results
from monitor.store.migrate import upgrade
from monitor.store.tables import (
    DeploymentRow,
    EvaluationRow,
    EventSliceRow,
    ProbeResultRow,
    ScrapeIntervalRow,
    ServerSpanRow,
    SliceRollupRow,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
END = 1_796_036_400.0  # Mon 2026-12-14 09:00 UTC
DAYS = 1.0
INTERVALS = {"interactive-32k": 120.0, "agent": 120.0, "multimodal": 120.0}


@dataclass(frozen=True)
class Built:
    model: Model
    store: Store
    hist: History
    spool: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    tmp = tmp_path_factory.mktemp("history")
    db = tmp / "db" / "h.db"
    db.parent.mkdir()
    upgrade(f"sqlite:///{db}")
    model = load_model(EXAMPLE)
    store = Store(f"sqlite:///{db}")
    hist = write_history(model, store, END, DAYS, probe_intervals=INTERVALS, otlp=["m3-interactive", "m3-repo"],
                         outage=(folder_outage(db), tmp / "spool"))  # fmt: skip
    try:
        yield Built(model, store, hist, tmp / "spool")
    finally:
        store.close()


def _count(store: Store, column: object) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count(column))) or 0)  # type: ignore[call-overload]


def test_every_op_is_stored_once_including_the_spooled_outage(built: Built) -> None:
    hist, store = built.hist, built.store
    assert hist.spooled > 50 and not any(built.spool.glob("spool*"))  # spooled, then replayed and gone
    assert _count(store, ProbeResultRow.id) == hist.probes > 1500
    assert _count(store, ServerSpanRow.id) == hist.spans > hist.probes
    assert _count(store, ScrapeIntervalRow.id) == hist.intervals == 3 * 288
    assert _count(store, EventSliceRow.id) == hist.slices
    raw, rolled = _sums(store, EventSliceRow), _sums(store, SliceRollupRow)
    assert raw == pytest.approx(rolled)  # the rollups hold every slice, the replayed ones too
    p = ProbeResultRow
    with store.session() as s:
        outage = s.scalar(select(func.count(p.id)).where(p.started_at.between(*hist.scenario.outage)))
    assert outage and outage > 10  # the outage's probes arrived through the spool


def _sums(store: Store, table: type[EventSliceRow] | type[SliceRollupRow]) -> dict[str, float]:
    with store.session() as s:
        rows = s.execute(select(table.slo_id, func.sum(table.total)).group_by(table.slo_id)).all()
    return {str(k): float(v) for k, v in rows}


def test_the_fast_counter_agrees_with_the_stores_own_counts(built: Built) -> None:
    scn, rng = built.hist.scenario, random.Random(7)
    counter = SliceCounter(built.store, scn.start - 40 * 86400, scn.end)
    with built.store.counter() as counts:
        for slo in built.model.slos:
            for _ in range(5):
                a = rng.uniform(scn.start - 3600, scn.end)
                b = rng.uniform(a, scn.end + 60)
                assert counter(slo.id, a, b) == pytest.approx(counts(slo.id, a, b)), (slo.id, a, b)


def test_evaluations_at_every_step_equal_the_evaluator_on_the_store(built: Built) -> None:
    steps = instants(built.hist.scenario.start, END, HISTORY_STEP)
    assert built.hist.evaluations == len(steps) * len(built.model.slos)
    slo = built.model.slos[0]
    at = steps[len(steps) // 2]
    with built.store.counter() as counts:
        want = evaluate_counts(slo, at, counts)
    with built.store.session() as s:
        row = s.scalars(select(EvaluationRow).where(EvaluationRow.slo_id == slo.id,
                                                    EvaluationRow.evaluated_at == at)).one()  # fmt: skip
    stored = {w.window: w for w in window_results(row.windows, row.evaluated_at)}
    assert {w.window for w in want.windows} == set(stored)
    for w in want.windows:
        assert (stored[w.window].good, stored[w.window].total) == pytest.approx((w.good, w.total)), w.window
    assert row.status == want.status


def test_the_brownout_fails_probes_and_the_deployment_changes_the_fingerprint(built: Built) -> None:
    scn = built.hist.scenario
    p = ProbeResultRow
    with built.store.session() as s:
        failed = s.execute(select(p.started_at, p.reason).where(p.request_class == "interactive-32k",
                                                                p.reason.is_not(None))).all()  # fmt: skip
        deployments = s.execute(select(DeploymentRow.vllm_version, DeploymentRow.first_seen)
                                .where(DeploymentRow.endpoint == "m3-repo").order_by(DeploymentRow.first_seen)).all()  # fmt: skip
    during = [r for at, r in failed if scn.brownout[0] - 120 <= at < scn.brownout[1]]
    assert len(during) >= 10 and {"timeout", "http_status"} <= set(during)
    assert len(failed) - len(during) <= 5  # outside the brown-out only the rare background failure
    assert [tuple(d) for d in deployments] == [("0.32.1", scn.start), ("0.33.0", scn.deployment_at)]


def test_the_same_arguments_draw_the_same_history() -> None:
    model = load_model(EXAMPLE)
    scn = scenario(END, 0.05)
    pools = {e.name: make_pool(e.name, e.deployment.max_model_len or 131072, scn) for e in model.endpoints}
    first = _draw(model, scn, pools, INTERVALS, 3)
    assert first == _draw(model, scn, pools, INTERVALS, 3) and first != _draw(model, scn, pools, INTERVALS, 4)
