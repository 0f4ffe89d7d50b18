"""Warm capacity comes only from replay runs of the current deployment: two deployments of one
endpoint in a migrated SQLite store, hand-written runs, the contract read back as Markdown; and
``compare run:A run:B``'s SLO rows against hand-computed two-proportion z-tests."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.contract.build import build_contract
from monitor.contract.render import markdown
from monitor.model import Model
from monitor.store.store import Store
from tests.contract.store import NEW, OLD, add_rows, model_of, run_of


def _contract(model: Model) -> str:
    db = Store(model.storage.url)
    try:
        with db.session() as s:
            return markdown(build_contract(s, model, 10_000.0))
    finally:
        db.close()


@pytest.fixture
def model(tmp_path: Path) -> Model:
    return model_of(tmp_path)


def test_runs_of_an_older_deployment_are_stale_evidence(model: Model) -> None:
    # the old deployment held 2/s and failed 4/s; then the endpoint moved to the new one
    add_rows(model, deployments=[(OLD, 1000.0), (OLD, 1900.0)],
         runs=[run_of(OLD, 1500.0, 2, True), run_of(OLD, 1600.0, 4, False)])  # fmt: skip
    assert "SLOs hold up to 2 req/s (rate, 2 run(s); an SLO failed at 4 req/s)" in _contract(model)
    add_rows(model, deployments=[(NEW, 3000.0)], runs=[])
    out = _contract(model)
    assert "SLOs hold up to" not in out
    assert (
        f"**Warm capacity**: not established: stale evidence: the newest replay run (2) is of "
        f"deployment {OLD.digest[:12]}, not the current {NEW.digest[:12]}" in out
    )
    # the kernel path and the fingerprint are the current deployment's, not the old runs'
    assert "KV-cache dtype: fp8" in out and "vLLM: 0.33.0" in out
    assert f"(deployment fingerprint {NEW.digest[:12]})" in out

    # a run on the new deployment is evidence again; the old ones are named as not counted
    add_rows(model, deployments=[], runs=[run_of(NEW, 3500.0, 3, True)])
    out = _contract(model)
    assert "SLOs hold up to 3 req/s (rate, 1 run(s))" in out and "stale" not in out
    assert "2 replay run(s) on other deployments not counted" in out


def test_a_replay_newer_than_the_deployment_history_is_the_current_deployment(model: Model) -> None:
    # the history last saw OLD at 1900; a replay at 2500 observed NEW (no service running since):
    # the most recent observation is the current deployment
    add_rows(model, deployments=[(OLD, 1000.0), (OLD, 1900.0)],
         runs=[run_of(OLD, 1500.0, 8, True), run_of(NEW, 2500.0, 2, True)])  # fmt: skip
    out = _contract(model)
    assert "SLOs hold up to 2 req/s (rate, 1 run(s))" in out
    assert "1 replay run(s) on other deployments not counted" in out and "vLLM: 0.33.0" in out


def _summary(clauses: list[tuple[str, float, int, int]]) -> dict[str, object]:
    itl = {"p50": 0.01, "p95": 0.02, "p99": 0.03}
    return {
        "samples": {"ttft": [], "tpot": [], "e2e": []},
        "percentiles": {"itl": itl},
        "request_throughput": 2.0,
        "output_throughput": 60.0,
        "goodput_ratio": 0.9,
        "clauses": [
            {"slo": slo, "objective": obj, "good": good, "total": total, "attained": good / total}
            for slo, obj, good, total in clauses
        ],
    }


def test_compare_runs_shows_each_slo_before_and_after_with_the_z_test(
    model: Model, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _summary(
        [("availability", 0.99, 100, 100), ("ttft-p95", 0.95, 95, 100), ("itl-p95", 0.95, 40, 40)]
    )
    after = _summary([("availability", 0.99, 99, 100), ("ttft-p95", 0.95, 80, 100), ("itl-p95", 0.95, 19, 20),
                      ("e2e-p95", 0.95, 50, 50)])  # fmt: skip
    runs = [
        replace(run_of(NEW, 100.0, 2, True), summary=before),
        replace(run_of(NEW, 200.0, 2, False), summary=after),
    ]
    add_rows(model, deployments=[], runs=runs)
    cfg = str(Path(model.storage.url.removeprefix("sqlite:///")).parent / "m3mon.yaml")
    args = ["compare", "-c", cfg, "--endpoint", "pool", "--before", "run:1", "--after", "run:2"]
    assert main([*args, "--json"]) == 0
    rows = {r["what"]: r for r in json.loads(capsys.readouterr().out)["rows"]}

    # ttft-p95: 95/100 → 80/100. Pooled p = 175/200 = 0.875; z = −0.15 / sqrt(0.875·0.125·(2/100))
    # = −0.15 / 0.046771 = −3.21, beyond 1.96. Interval: −0.15 ± 1.959964 · sqrt(0.95·0.05/100 +
    # 0.8·0.2/100) = −0.15 ± 1.959964 · 0.045552 = [−0.23928, −0.06072]
    ttft = rows["ttft-p95 attainment (objective 95.00%)"]
    assert (ttft["before"], ttft["after"]) == (0.95, 0.8) and ttft["delta"] == pytest.approx(-0.15)
    assert ttft["beyond_noise"] is True
    assert ttft["low"] == pytest.approx(-0.23928, abs=1e-5) and ttft["high"] == pytest.approx(
        -0.06072, abs=1e-5
    )
    # availability: 100/100 → 99/100. Pooled p = 0.995; z = −0.01 / sqrt(0.995·0.005·0.02) = −1.0025
    avail = rows["availability attainment (objective 99.00%)"]
    assert avail["delta"] == pytest.approx(-0.01) and avail["beyond_noise"] is False
    # itl-p95: 20 events after (fewer than 30): no verdict; e2e-p95 judged on one run only: no test
    assert rows["itl-p95 attainment (objective 95.00%)"]["beyond_noise"] is None
    e2e = rows["e2e-p95 attainment (objective 95.00%)"]
    assert (e2e["before"], e2e["after"], e2e["beyond_noise"]) == (None, 1.0, None)

    assert main(args) == 0
    text = capsys.readouterr().out
    assert "[-0.2393, -0.06072] BEYOND NOISE" in text and "changed: nothing" in text
