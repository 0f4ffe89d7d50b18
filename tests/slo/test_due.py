"""Backfilling evaluations after downtime, store-backed counts, and the status command."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from monitor.cli import main
from monitor.model import Model, load_model
from monitor.slo.due import due_steps, evaluate_due
from monitor.slo.evaluate import slice_counter
from monitor.slo.metrics import SLOMetrics
from monitor.slo.slices import EventSlice
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import probe_op, slices_op
from tests.store.helpers import T0, probe

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    cfg = tmp_path / "m.yaml"
    cfg.write_text(EXAMPLE.read_text().replace("sqlite:///m3mon.db", f"sqlite:///{tmp_path / 's.db'}"))
    return cfg


@pytest.fixture
def model(config: Path) -> Model:
    return load_model(config)


@pytest.fixture
def store(model: Model) -> Iterator[Store]:
    upgrade(model.storage.url)
    s = Store(model.storage.url)
    yield s
    s.close()


def test_due_steps_bounded_and_aligned() -> None:
    assert due_steps(None, T0 + 75) == [T0 + 60]
    assert due_steps(T0, T0 + 185) == [T0 + 60, T0 + 120, T0 + 180]
    steps = due_steps(T0 - 5 * 86400, T0, max_steps=10_000)
    assert len(steps) == 1440 and steps[0] == T0 - 86400 + 60 and steps[-1] == T0
    assert len(due_steps(T0 - 86400, T0, max_steps=100)) == 100


def test_evaluate_due_backfills_missed_steps_once(store: Store, model: Model) -> None:
    store.apply([probe_op(model, probe(T0 + 30))])
    first = evaluate_due(store, model, T0 + 60)
    assert {e.evaluated_at for e in first} == {T0 + 60}
    later = evaluate_due(store, model, T0 + 60 + 5 * 60 + 30)  # 5 minutes of downtime
    assert sorted({e.evaluated_at for e in later}) == [T0 + 60 * k for k in range(2, 7)]
    assert evaluate_due(store, model, T0 + 60 * 6 + 59) == []
    latest = store.latest_evaluations()
    assert len(latest) == len(model.slos) and {e.evaluated_at for e in latest} == {T0 + 360}
    registry = CollectorRegistry()
    SLOMetrics(registry).update(latest)
    labels = {"class": "interactive-32k", "slo": "availability", "sli": "availability", "window": "1h"}
    assert registry.get_sample_value("m3mon_slo_attainment_ratio", labels) == 1.0
    no_data = registry.get_sample_value("m3mon_slo_burn_rate", dict(labels, window="5m"))
    assert no_data is None  # no series: the probe at T0+30 is outside (T0+60, T0+360]
    objective = registry.get_sample_value(
        "m3mon_slo_objective_ratio", {k: labels[k] for k in ("class", "slo", "sli")}
    )
    assert objective == pytest.approx(0.999)


def test_store_counts_match_pure_counts(store: Store) -> None:
    slices = [
        EventSlice("a/b", "ep", "server", T0 + i * 15 - 15, T0 + i * 15, float(i % 7), 10.0, "server")
        for i in range(1, 4 * 240 + 3)
    ]
    store.apply([slices_op(slices)])
    pure = slice_counter(slices)
    for start, end in [
        (T0, T0 + 300),
        (T0 + 10, T0 + 7300),
        (T0 + 3600, T0 + 3 * 3600),
        (T0 - 99, T0 + 4 * 3600 + 45),
    ]:
        got = store.counts("a/b", start, end)
        assert got == pytest.approx(pure("a/b", start, end)), (start, end)


def test_slo_status_command(
    store: Store, model: Model, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store.apply([probe_op(model, probe(T0 + 30 + i, reason="timeout" if i == 0 else None)) for i in range(4)])
    assert main(["slo", "status", "-c", str(config), "--at", "2026-01-01T00:01:00Z"]) == 0
    out = capsys.readouterr().out
    row = next(
        line for line in out.splitlines() if line.startswith("interactive-32k") and "availability" in line
    )
    assert "75.000%" in row and "exhausted" in row
    assert "no data" in out
    assert main(["slo", "status", "-c", str(config), "--at", str(T0 + 60), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["evaluations"]) == len(model.slos)
    assert main(["slo", "status", "-c", str(config), "--at", "yesterday"]) == 2
