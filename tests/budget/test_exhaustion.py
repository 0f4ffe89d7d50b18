"""Time to exhaustion: the stored evaluation and the generated rules (real promtool) against hand math.

Scenarios and answers: :mod:`tests.budget.scenarios` (computed by hand in its docstring).
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate.exhaustion import exhaustion_groups
from monitor.generate.rules import rule_file
from monitor.generate.slo_rules import slo_groups
from monitor.model import load_model
from monitor.slo.evaluate import evaluate_counts
from monitor.slo.exhaustion import exhaustion_alert, format_seconds, time_to_exhaustion
from monitor.store import Store
from tests.budget import scenarios as sc
from tests.support.real import require_binary


@pytest.mark.parametrize("cls", ["steady", "ramp"])
def test_stored_evaluation_projects_the_hand_computed_time(db_url: str, cls: str) -> None:
    model = sc.model(db_url)
    slo = model.request_class(cls).slos[0]
    store = Store(db_url)
    try:
        with store.counter() as counts:
            evaluation = evaluate_counts(slo, sc.AT, counts)
    finally:
        store.close()
    short, long, alert = sc.EXPECTED[cls]
    period = evaluation.window(slo.period_window)
    assert period is not None and period.budget_remaining == pytest.approx(sc.REMAINING[cls], rel=1e-12)
    assert time_to_exhaustion(evaluation, "1h") == pytest.approx(short, rel=1e-9)
    assert time_to_exhaustion(evaluation, "1d") == pytest.approx(long, rel=1e-9)
    assert exhaustion_alert(slo, evaluation) is alert


def test_spent_budget_is_zero_and_no_bad_events_is_never() -> None:
    from monitor.slo.evaluate import evaluate_slices
    from monitor.slo.slices import EventSlice

    slo = sc.model().request_class("steady").slos[0]
    spent = [EventSlice(slo.id, "pool", "probe:chat", t, t, 90, 100, "probes") for t in (3000.0, 3600.0)]
    clean = [EventSlice(slo.id, "pool", "probe:chat", t, t, 100, 100, "probes") for t in (3000.0, 3600.0)]
    assert time_to_exhaustion(evaluate_slices(slo, spent, 3600.0), "1h") == 0.0
    assert time_to_exhaustion(evaluate_slices(slo, clean, 3600.0), "1h") == math.inf
    assert time_to_exhaustion(evaluate_slices(slo, [], 3600.0), "1h") is None
    assert [format_seconds(v) for v in (None, math.inf, 0.0, 86_400.0, 378_000.0, 90.0, 365 * 86_400.0,
                                        37_263 * 86_400.0 + 7_200)] == [
        "no data", "never", "0s", "1d", "4d 9h", "1m 30s", "365d", "> 1y",  # the report printed "37263d 2h"
    ]  # fmt: skip


def _series(cls: str) -> list[dict[str, str]]:
    good, bad, goods, bads = 0, 0, ["0"], ["0"]
    for k in range(1, sc.INTERVALS + 1):
        b = sc.bad_per_step(cls, k)
        good, bad = good + sc.VALID_PER_STEP - b, bad + b
        goods.append(str(good))
        bads.append(str(bad))
    base = f'job="m3mon",class="{cls}",endpoint="pool",kind="chat"'
    return [
        {"series": f'{cv.PROBE_TOTAL}{{{base},result="success",reason="none"}}', "values": " ".join(goods)},
        {"series": f'{cv.PROBE_TOTAL}{{{base},result="failure",reason="timeout"}}', "values": " ".join(bads)},
    ]


def _promtool_doc(rules: str) -> dict[str, Any]:
    samples = [
        {"labels": f'{{class="{cls}",sli="availability",slo="avail",window="{w}"}}', "value": value}
        for cls, (short, long, _) in sc.EXPECTED.items()
        for w, value in (("1h", short), ("1d", long))
    ]
    alert = {"alertname": cv.ALERT_EXHAUSTION_SOON, "eval_time": "24h",
             "exp_alerts": [{"exp_labels": {"severity": "ticket", "class": "steady", "slo": "avail",
                                            "sli": "availability"},
                             "exp_annotations": {
                                 "summary": "steady avail: error budget runs out within 7d",
                                 "description": "At the burn of the last 1h and of the last 1d, SLO steady/avail "
                                                "spends what is left of its 30d error budget in less than 7d.",
                                 # the default: the runbook the monitor serves on exporter.listen
                                 "runbook_url": "http://127.0.0.1:9464/runbooks/SLOErrorBudgetExhaustionSoon.md",
                                 }}]}  # fmt: skip
    return {
        "rule_files": [rules],
        "evaluation_interval": "1h",  # rules run hourly (fast); the 5m samples still fill every window
        "tests": [{
            "interval": "5m",
            "input_series": _series("steady") + _series("ramp"),
            "promql_expr_test": [{"expr": f"round({cv.SLO_EXHAUSTION_RECORD})", "eval_time": "24h",
                                  "exp_samples": samples}],
            "alert_rule_test": [alert],
        }],
    }  # fmt: skip


def _run_promtool(tmp_path: Path, doc: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    promtool = require_binary("promtool", "/usr/bin/promtool")
    model = sc.model()
    # The SLO groups' step records and the records of the windows the projection reads (the period,
    # 1h, 1d), then ours, in
    # one group per SLO: promtool evaluates groups in no fixed order, and with hourly steps a record
    # read from another group a step late would be stale (production evaluates every minute).
    needed = ("1h", "1d", "30d", "ratio", ":step", ":cumulative", ":timestamp")
    groups = []
    for slo_group, ours in zip(slo_groups(model), exhaustion_groups(model), strict=True):
        records = tuple(r for r in slo_group.records if r["record"].endswith(needed)) + ours.records
        groups.append(dataclasses.replace(ours, records=records))
    (tmp_path / "slo.rules.yml").write_text(rule_file(groups, model.alerting, "test"), encoding="utf-8")
    (tmp_path / "t.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    args = [promtool, "test", "rules", str(tmp_path / "t.yml")]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def test_generated_rules_project_the_same_times_and_alert_in_promtool(tmp_path: Path) -> None:
    proc = _run_promtool(tmp_path, _promtool_doc("slo.rules.yml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_promtool_check_can_fail(tmp_path: Path) -> None:
    doc = _promtool_doc("slo.rules.yml")
    doc["tests"][0]["promql_expr_test"][0]["exp_samples"][0]["value"] = 86_401
    proc = _run_promtool(tmp_path, doc)
    assert proc.returncode != 0 and "8.6401E+04" in proc.stdout + proc.stderr


def test_the_example_configuration_generates_a_projection_per_slo_and_window() -> None:
    model = load_model(Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml")
    records = [r for g in exhaustion_groups(model) for r in g.records]
    assert len(records) == 2 * len(model.slos)


def test_the_exporter_publishes_the_projection_per_window() -> None:
    from prometheus_client import CollectorRegistry

    from monitor.slo.evaluate import evaluate_slices
    from monitor.slo.metrics import SLOMetrics
    from tests.budget.conftest import scenario_slices

    model = sc.model()
    slices = scenario_slices()
    registry = CollectorRegistry()
    SLOMetrics(registry).update(evaluate_slices(s, slices, sc.AT) for s in model.slos)
    labels = {"class": "steady", "slo": "avail", "sli": "availability"}
    get = registry.get_sample_value
    assert get(cv.SLO_TIME_TO_EXHAUSTION, {**labels, "window": "1h"}) == pytest.approx(86_400.0)
    assert get(cv.SLO_TIME_TO_EXHAUSTION, {**labels, "window": "1d"}) == pytest.approx(518_400.0)
    assert (
        get(cv.SLO_TIME_TO_EXHAUSTION, {**labels, "class": "quiet", "window": "1h"}) is None
    )  # no data: no series
