"""Event slices from probe results and from server signals."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from monitor.model import Model, load_model
from monitor.scrape.signals import EngineSignals, Histogram, Signals
from monitor.slo.slices import slices_from_probe, slices_from_signals
from tests.store.helpers import T0, probe, signals

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"


@pytest.fixture(scope="module")
def model() -> Model:
    return load_model(EXAMPLE)


def test_probe_success_and_latency(model: Model) -> None:
    got = {s.slo_id: (s.good, s.total) for s in slices_from_probe(model, probe(T0, ttft=6.0))}
    assert got == {
        "interactive-32k/availability": (1, 1),
        "interactive-32k/correctness": (1, 1),
        "interactive-32k/ttft-p99": (0, 1),  # 6 s > 5 s threshold
    }


def test_probe_wrong_answer_is_available_but_incorrect(model: Model) -> None:
    got = {s.slo_id: (s.good, s.total) for s in slices_from_probe(model, probe(T0, reason="wrong_answer"))}
    assert got["interactive-32k/availability"] == (1, 1)
    assert got["interactive-32k/correctness"] == (0, 1)


def test_server_slices_exact_and_availability(model: Model) -> None:
    got = {
        (s.slo_id, s.exact): (s.good, s.total)
        for s in slices_from_signals(model, "m3-interactive", signals(T0, T0 + 15))
    }
    assert got == {
        ("interactive-32k/ttft-p95", True): (95, 100),
        ("interactive-32k/itl-p95", True): (98, 100),
    }
    repo = slices_from_signals(model, "m3-repo", _repo_signals())
    assert not [s for s in repo if s.slo_id.endswith("queue-p95")]  # 5 s is no edge of (1, 10, +Inf)


def _repo_signals(reset: bool = False, counts: tuple[float, ...] = (40, 90, 100)) -> Signals:
    queue = Histogram((1.0, 10.0, math.inf), counts, 50.0, counts[-1])
    tot = EngineSignals(finished={"stop": 8, "abort": 1, "error": 1}, histograms={"queue": queue})
    return Signals("m3-repo", "vllm", "vllm-v1-engine", None, T0 + 15, T0, reset, {"0": tot}, tot)


def test_threshold_off_bucket_edge_is_no_data_never_all_slow(
    model: Model, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/slo-events.md: a pool without an edge at the threshold gives the SLO no events."""
    with caplog.at_level(logging.WARNING):
        got = slices_from_signals(model, "m3-repo", _repo_signals())
    assert not [s for s in got if s.slo_id == "repo-analysis-128k/queue-p95"]
    assert {s.slo_id for s in got} >= {"repo-analysis-128k/e2e-p95"} or got == []
    assert "not a bucket edge" in caplog.text and "no data" in caplog.text


def test_counter_reset_interval_never_negative(model: Model) -> None:
    edged = Histogram((5.0, 10.0, math.inf), (-5, -3, -2), 0.0, -2)
    tot = EngineSignals(finished={"stop": -3}, histograms={"queue": edged})
    sig = Signals("m3-repo", "vllm", "vllm-v1-engine", None, T0 + 15, T0, True, {"0": tot}, tot)
    clamped = slices_from_signals(model, "m3-repo", sig)
    assert clamped and all(0 <= s.good <= s.total for s in clamped)


def test_server_availability_counts_errors_as_bad_and_leaves_aborts_out(model: Model) -> None:
    sig = _repo_signals()  # stop 8, abort 1, error 1
    avail = _avail_model_slices(model, sig)
    assert avail == (8, 9)


def _avail_model_slices(model: Model, sig: Signals) -> tuple[float, float]:
    from dataclasses import replace

    rc = model.request_class("repo-analysis-128k")
    slo = replace(rc.slos[0], source="server")
    m2 = replace(
        model, classes=tuple(replace(c, slos=(slo,)) if c.name == rc.name else c for c in model.classes)
    )
    (s,) = slices_from_signals(m2, "m3-repo", sig)
    return s.good, s.total


def test_cumulative_reading_gives_no_slices(model: Model) -> None:
    from dataclasses import replace

    assert slices_from_signals(model, "m3-interactive", replace(signals(T0, T0 + 15), start=None)) == []
