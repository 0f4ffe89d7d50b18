"""The generated fleet rules under promtool, with expectations computed by hand.

Example config at 2 shards: m3-repo is shard 0, m3-interactive and m3-extended shard 1
(`m3mon fleet plan`). Input: shard 0's pair exports m3-repo, shard 1 exports nothing, the
evaluator gauge is 1 on one replica for 10 minutes and then 0 everywhere.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from monitor.fleet.layout import fleet_layout
from monitor.generate.fleet_rules import fleet_groups
from monitor.generate.rules import rule_file
from monitor.model import load_model
from tests.support.real import require_binary

ROOT = Path(__file__).resolve().parents[2]
OWNED = 'm3mon_fleet_endpoint_owned{job="m3mon",instance="%s",replica="%s",shard="0",endpoint="m3-repo"}'
EVALUATOR = 'm3mon_fleet_evaluator{job="m3mon",instance="%s",replica="%s",shard="0"}'


def _alert(name: str, labels: dict[str, str]) -> dict[str, object]:
    return {"exp_labels": {"severity": "ticket" if name == "M3MonNoEvaluator" else "page", **labels}}


def _tests() -> dict[str, object]:
    series = [
        {"series": OWNED % ("m:1", "a"), "values": "1x30"},
        {"series": OWNED % ("m:2", "b"), "values": "1x30"},
        {"series": EVALUATOR % ("m:1", "a"), "values": "1x9 0x20"},
        {"series": EVALUATOR % ("m:2", "b"), "values": "0x30"},
    ]
    unmonitored = [
        _alert("M3MonEndpointUnmonitored", {"endpoint": e, "job": "m3mon"})
        for e in ("m3-extended", "m3-interactive")
    ]
    return {
        "rule_files": ["fleet.rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    # absent from the start; `for: 2m` → pending at 1m, firing from 2m
                    {"eval_time": "1m", "alertname": "M3MonEndpointUnmonitored", "exp_alerts": []},
                    {"eval_time": "3m", "alertname": "M3MonEndpointUnmonitored", "exp_alerts": unmonitored},
                    {"eval_time": "8m", "alertname": "M3MonNoEvaluator", "exp_alerts": []},
                    # max() < 1 from 10m; `for: 5m` → still pending at 14m, firing at 15m
                    {"eval_time": "14m", "alertname": "M3MonNoEvaluator", "exp_alerts": []},
                    {
                        "eval_time": "15m",
                        "alertname": "M3MonNoEvaluator",
                        "exp_alerts": [_alert("M3MonNoEvaluator", {})],
                    },
                ],
                "promql_expr_test": [
                    {
                        "expr": "m3mon:fleet_endpoint_replicas",
                        "eval_time": "5m",
                        "exp_samples": [
                            {
                                "labels": 'm3mon:fleet_endpoint_replicas{job="m3mon",shard="0",'
                                'endpoint="m3-repo"}',
                                "value": 2,
                            }
                        ],
                    },
                ],
            }
        ],
    }


def test_fleet_rules_pass_hand_computed_promtool_tests(tmp_path: Path) -> None:
    promtool = require_binary("promtool", "/usr/bin/promtool")
    model = fleet_layout(load_model(ROOT / "examples" / "monitor.yaml"))
    generated = rule_file(fleet_groups(model), model.alerting, "test")
    rules = yaml.safe_load(generated)
    for rule in rules["groups"][0]["rules"]:
        rule.pop("annotations", None)  # the expressions and labels are under test, not the prose
    (tmp_path / "fleet.rules.yml").write_text(yaml.safe_dump(rules))
    (tmp_path / "fleet.test.yml").write_text(yaml.safe_dump(_tests()))
    proc = subprocess.run([promtool, "test", "rules", str(tmp_path / "fleet.test.yml")], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the kept copy is what the generator writes
    assert (ROOT / "alerts" / "fleet" / "fleet.rules.yml").read_text().split("\n", 1)[1] == generated.split(
        "\n", 1
    )[1]
