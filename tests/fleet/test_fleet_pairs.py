"""One dead replica of a healthy pair does not page; a whole shard does (promtool, hand-written series).

Rules under test: the kept ``alerts/fleet/*.rules.yml`` the fleet Prometheus loads
(``deploy/prometheus-fleet.yml``; test_outputs checks they are what ``m3mon generate`` writes).
Input, 1-minute samples: shard 0 is replicas m:1 (0-a) and m:2 (0-b); 0-a dies at 10m, 0-b at 30m.
Shard 1 (m:3, m:4) stays up; its replica 1-a cannot scrape m3-interactive from the start, 1-b from
20m. Expected by hand from docs/fleet.md's failure-mode table (every wait is ``for: 5m``):

* M3MonReplicaDown (ticket) for 0-a from 15m; gone once 0-b is down too (the shard then pages).
* M3MonMonitorDown (page): nothing while 0-b is up (25m, 34m), shard 0 from 35m.
* M3MonScrapeFailing: nothing while 1-b scrapes (19m); once for the endpoint from 25m.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.support.real import require_binary

ROOT = Path(__file__).resolve().parents[2]
UP = 'up{job="m3mon",instance="m:%d",replica="%s",shard="%s"}'
SCRAPED = 'm3mon_scrape_success{job="m3mon",instance="m:%d",replica="%s",shard="1",endpoint="m3-interactive"}'
REPLICA_0A = {"job": "m3mon", "instance": "m:1", "replica": "0-a", "shard": "0"}


def _case(name: str, at: str, *labels: dict[str, str]) -> dict[str, object]:
    severity = "page" if name == "M3MonMonitorDown" else "ticket"
    return {"eval_time": at, "alertname": name, "exp_alerts": [{"exp_labels": {"severity": severity, **lab}}
                                                               for lab in labels]}  # fmt: skip


def _tests() -> dict[str, object]:
    series = [
        {"series": UP % (1, "0-a", "0"), "values": "1x9 0x40"},
        {"series": UP % (2, "0-b", "0"), "values": "1x29 0x20"},
        {"series": UP % (3, "1-a", "1"), "values": "1x50"},
        {"series": UP % (4, "1-b", "1"), "values": "1x50"},
        {"series": SCRAPED % (3, "1-a"), "values": "0x50"},
        {"series": SCRAPED % (4, "1-b"), "values": "1x19 0x30"},
    ]
    shard0 = {"job": "m3mon", "shard": "0"}
    scrape = {"job": "m3mon", "shard": "1", "endpoint": "m3-interactive"}
    cases = [
        _case("M3MonReplicaDown", "14m"),
        _case("M3MonReplicaDown", "15m", REPLICA_0A),
        _case("M3MonReplicaDown", "29m", REPLICA_0A),
        _case("M3MonReplicaDown", "31m"),
        _case("M3MonMonitorDown", "25m"),
        _case("M3MonMonitorDown", "34m"),
        _case("M3MonMonitorDown", "35m", shard0),
        _case("M3MonScrapeFailing", "19m"),
        _case("M3MonScrapeFailing", "24m"),
        _case("M3MonScrapeFailing", "25m", scrape),
    ]
    return {
        "rule_files": ["fleet.rules.yml", "operational.rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": cases}],
    }


def test_one_dead_replica_tickets_a_dead_shard_pages(tmp_path: Path) -> None:
    promtool = require_binary("promtool", "/usr/bin/promtool")
    for name in ("fleet.rules.yml", "operational.rules.yml"):
        rules = yaml.safe_load((ROOT / "alerts" / "fleet" / name).read_text())
        for group in rules["groups"]:
            for rule in group["rules"]:
                rule.pop("annotations", None)  # the expressions and labels are under test, not the prose
        (tmp_path / name).write_text(yaml.safe_dump(rules))
    (tmp_path / "pairs.test.yml").write_text(yaml.safe_dump(_tests()))
    proc = subprocess.run([promtool, "test", "rules", str(tmp_path / "pairs.test.yml")], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_fleet_prometheus_config_is_valid_and_skips_the_per_replica_rules() -> None:
    promtool = require_binary("promtool", "/usr/bin/promtool")
    config = ROOT / "deploy" / "prometheus-fleet.yml"
    proc = subprocess.run([promtool, "check", "config", "--syntax-only", str(config)], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rule_files = yaml.safe_load(config.read_text())["rule_files"]
    # the rules directory is ./alerts (compose): every SLO file and the fleet directory, not operational.rules.yml
    assert rule_files == ["/etc/prometheus/rules/slo-*.rules.yml", "/etc/prometheus/rules/fleet/*.rules.yml"]
