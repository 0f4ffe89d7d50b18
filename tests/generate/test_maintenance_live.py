"""Maintenance end to end on real parts: the monitor's exporter publishes the boundaries, a real
Prometheus evaluates the generated ``M3MonMaintenanceInProgress`` rule on them, and a real
Alertmanager with the generated ``inhibit_rules`` holds back exactly the alerts it should.

The window covers class extended-context, which only m3-extended serves, and m3-extended serves
nothing else: so both its burn alerts (whole class) and alerts about m3-extended (whole endpoint)
are inhibited; the same alerts of interactive-32k and m3-repo are not.
"""

from __future__ import annotations

import datetime as dt
import math
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from monitor import conventions as cv
from monitor.config import parse_config
from monitor.exporter import Exporter
from monitor.generate.alertmanager import alertmanager_config
from monitor.generate.maintenance_rules import maintenance_groups
from monitor.generate.rules import rule_file
from monitor.model import Model, build_model
from tests.support import localhttp
from tests.support.alertmanager import running_alertmanager
from tests.support.exposition import serving
from tests.support.prometheus import running_prometheus, wait_for
from tests.support.real import require_binary

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"


def _model() -> Model:
    start = dt.datetime.fromtimestamp(math.floor(time.time() / 60) * 60 - 60, dt.UTC)
    window = (f"maintenance:\n  - name: kernel-upgrade\n    start: {start.isoformat()}\n    duration: 15m\n"
              "    classes: [extended-context]\n    reason: test\n")  # fmt: skip
    return build_model(parse_config(EXAMPLE.read_text() + "\n" + window, "monitor.yaml"))


def _alertmanager_config(model: Model) -> dict[str, Any]:
    config = alertmanager_config(model)
    config["route"].update(group_wait="0s", group_interval="1s")  # test timing; inhibit_rules as generated
    for route in config["route"]["routes"]:
        route.update(group_wait="0s", group_interval="1s")
    return config


def _prometheus_config(model: Model, target: str, am: str, rules: Path) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [am.removeprefix("http://")]}]}]},
        "scrape_configs": [
            {"job_name": model.alerting.job_monitor, "static_configs": [{"targets": [target]}]}
        ],
    }


def _states(am: str) -> dict[tuple[str, str], list[str]]:
    """(alertname, class or endpoint) -> inhibitedBy of every alert Alertmanager holds."""
    alerts = localhttp.get(f"{am}/api/v2/alerts", timeout=5).json()
    return {
        (a["labels"]["alertname"], a["labels"].get("class") or a["labels"].get("endpoint", "")): a["status"][
            "inhibitedBy"
        ]
        for a in alerts
    }


TARGETS = [
    {"alertname": cv.ALERT_BURN_PAGE, "class": "extended-context", "slo": "availability", "severity": "page"},
    {"alertname": cv.ALERT_BURN_PAGE, "class": "interactive-32k", "slo": "availability", "severity": "page"},
    {"alertname": cv.ALERT_ENDPOINT_DOWN, "endpoint": "m3-extended", "severity": "page"},
    {"alertname": cv.ALERT_ENDPOINT_DOWN, "endpoint": "m3-repo", "severity": "page"},
]


def test_a_maintenance_window_inhibits_its_class_and_endpoint_alerts_only(tmp_path: Path) -> None:
    model = _model()
    rules = tmp_path / "maintenance.rules.yml"
    rules.write_text(rule_file(maintenance_groups(model), model.alerting, "test"))
    with (
        serving(Exporter(model).render) as target,
        running_alertmanager(_alertmanager_config(model), tmp_path) as am,
        running_prometheus(_prometheus_config(model, target, am, rules), tmp_path),
    ):
        wait_for(lambda: (cv.ALERT_MAINTENANCE, "extended-context") in _states(am), 40,
                 "M3MonMaintenanceInProgress from Prometheus")  # fmt: skip
        now = dt.datetime.now(dt.UTC).isoformat()
        posted = [{"labels": t, "annotations": {"summary": "test"}, "startsAt": now} for t in TARGETS]
        assert localhttp.post(f"{am}/api/v2/alerts", json=posted, timeout=5).status_code == 200

        def settled() -> dict[tuple[str, str], list[str]] | None:
            states = _states(am)
            ours = [states.get((t["alertname"], t.get("class") or t["endpoint"])) for t in TARGETS]
            return states if all(s is not None for s in ours) and ours[0] and ours[2] else None

        states = wait_for(settled, 30, "the inhibitions to settle")
    assert states[(cv.ALERT_BURN_PAGE, "extended-context")]  # whole class in maintenance
    assert states[(cv.ALERT_ENDPOINT_DOWN, "m3-extended")]  # whole endpoint in maintenance
    assert states[(cv.ALERT_BURN_PAGE, "interactive-32k")] == []
    assert states[(cv.ALERT_ENDPOINT_DOWN, "m3-repo")] == []
    assert states[(cv.ALERT_MAINTENANCE, "extended-context")] == []  # never inhibits itself


def test_the_maintenance_alert_holds_from_just_after_start_to_end_inclusive(tmp_path: Path) -> None:
    """promtool, hand-written boundaries (10 min, 20 min]: evaluated at 10 min the occurrence has
    not begun; at 10m30s and at exactly 20 min it holds; at 20m30s it is over."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    model = _model()
    (tmp_path / "rules.yml").write_text(rule_file(maintenance_groups(model), model.alerting, "test"))
    names = {"job": model.alerting.job_monitor, "maintenance": "m", "class": "c", "endpoint": "e",
             "whole_class": "true", "whole_endpoint": "true"}  # fmt: skip
    labels = ",".join(f'{k}="{v}"' for k, v in names.items())
    [rule] = yaml.safe_load((tmp_path / "rules.yml").read_text())["groups"][0]["rules"]
    annotations = {  # the text is not under test here: the instants are
        k: v.replace("{{ $labels.maintenance }}", "m")
        .replace("{{ $labels.class }}", "c")
        .replace("{{ $labels.endpoint }}", "e")
        for k, v in rule["annotations"].items()
    }
    assert annotations["summary"] == "Maintenance m: c on e"
    firing = [{"exp_labels": {**names, "severity": "info"}, "exp_annotations": annotations}]
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": "30s",
                "input_series": [
                    {"series": f"{cv.MAINTENANCE_START}{{{labels}}}", "values": "600x50"},
                    {"series": f"{cv.MAINTENANCE_END}{{{labels}}}", "values": "1200x50"},
                ],
                "alert_rule_test": [
                    {"eval_time": at, "alertname": cv.ALERT_MAINTENANCE, "exp_alerts": alerts}
                    for at, alerts in (("10m", []), ("10m30s", firing), ("20m", firing), ("20m30s", []))
                ],
            }
        ],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
