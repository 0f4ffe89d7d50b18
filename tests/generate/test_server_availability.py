"""Server-side availability: the generated PromQL and the stored evaluations count the same events.

Both read vLLM's ``request_success_total`` by ``finished_reason``: ``error`` is bad and ``abort`` is
not a valid event. The PromQL is run by the real promtool on counters with every reason, and its
value must equal the bad share the SQL evaluator's slice gives for the same increases.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate import windows
from monitor.generate.rules import rule_file
from monitor.generate.slo_rules import slo_groups
from monitor.model import SLO, Model, load_model
from monitor.scrape.signals import EngineSignals, Signals
from monitor.slo.slices import slices_from_signals
from tests.generate.conftest import EXAMPLE
from tests.support.real import require_binary

ENDPOINT = "m3-repo"
#: Increase per minute of ``vllm:request_success_total`` by ``finished_reason``.
PER_MINUTE = {"stop": 70.0, "length": 10.0, "abort": 15.0, "error": 5.0}


def _server_model() -> tuple[Model, SLO]:
    model = load_model(EXAMPLE)
    rc = model.request_class("repo-analysis-128k")
    slo = dataclasses.replace(next(s for s in rc.slos if s.sli == "availability"), source="server")
    classes = tuple(dataclasses.replace(c, slos=(slo,)) if c.name == rc.name else c for c in model.classes)
    return dataclasses.replace(model, classes=classes), slo


def _stored_bad_ratio(model: Model, per_minute: dict[str, float]) -> float:
    total = EngineSignals(finished=dict(per_minute))
    signals = Signals(ENDPOINT, "vllm", "vllm-v1-engine", None, 1060.0, 1000.0, False, {"0": total}, total)
    (only,) = slices_from_signals(model, ENDPOINT, signals)
    return only.bad / only.total


def _promtool(model: Model, slo: SLO, per_minute: dict[str, float], expected: float, tmp: Path) -> str:
    """Run the SLO's generated rule group in promtool on these counters and read its 5m error
    ratio; its output, or "" on a match.

    promtool compares floats exactly, so both sides are compared in parts per billion.
    """
    promtool = require_binary("promtool", "/usr/bin/promtool")
    base = f'job="{model.alerting.job_vllm}",instance="vllm:8000",endpoint="{ENDPOINT}",model_name="m3",engine="0"'
    series = [
        {
            "series": f'{cv.VLLM_REQUEST_SUCCESS}{{{base},{cv.L_FINISHED_REASON}="{r}"}}',
            "values": f"0+{n:g}x20",
        }
        for r, n in per_minute.items()
    ]
    (tmp / "rules.yml").write_text(rule_file(slo_groups(model, slo.request_class), model.alerting, "test"))
    ratio = windows.ratio(f'{{class="{slo.request_class}",slo="{slo.name}"}}', "5m")  # summed on demand
    doc = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series,
                   "promql_expr_test": [{"expr": f"round(1e9 * sum({ratio}))",
                                         "eval_time": "10m",
                                         "exp_samples": [{"labels": "{}", "value": round(1e9 * expected)}]}]}],
    }  # fmt: skip
    (tmp / "t.yml").write_text(yaml.safe_dump(doc))
    proc = subprocess.run([promtool, "test", "rules", "t.yml"], cwd=tmp,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    return "" if proc.returncode == 0 else proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "per_minute",
    [PER_MINUTE, {"stop": 90.0, "error": 10.0}, {"stop": 50.0, "abort": 50.0}],
    ids=["every-reason", "no-aborts", "no-errors"],
)
def test_promql_and_stored_evaluation_agree(per_minute: dict[str, float], tmp_path: Path) -> None:
    model, slo = _server_model()
    stored = _stored_bad_ratio(model, per_minute)
    assert _promtool(model, slo, per_minute, stored, tmp_path) == ""


def test_the_promtool_check_can_fail(tmp_path: Path) -> None:
    """Counting aborts as bad (the old rule) gives a different value, which promtool rejects."""
    model, slo = _server_model()
    wrong = (PER_MINUTE["error"] + PER_MINUTE["abort"]) / sum(PER_MINUTE.values())
    assert "got:" in _promtool(model, slo, PER_MINUTE, wrong, tmp_path)


def test_aborts_are_not_counted_and_errors_are_bad() -> None:
    model, _ = _server_model()
    assert _stored_bad_ratio(model, PER_MINUTE) == pytest.approx(5 / 85)
