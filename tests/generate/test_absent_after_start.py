"""``SLOMetricAbsent`` on a probe SLO right after the monitor starts, in the real promtool.

A class probed every 30 minutes (the example's extended-context: interval 30m, timeout 600 s, so
its quiet window is 2 × 1800 + 600 = 4200 s) has its first probe finish seconds after the monitor
starts, before Prometheus' first scrape of the monitor: the counter's first sample is already 1.
``increase()`` sees no rise in a series that appears at 1, so "no probe completed within 4200 s"
read true from the start and the class ticketed ``SLOMetricAbsent`` 10 minutes after every
monitor start until its second probe, 30 minutes later (seen on the live run of field/live_run.py,
2026-12-04). The rule must stay quiet then, and still fire when the class really goes quiet.

The oracle is the definition in docs/slo-events.md §3: the alert fires once no probe of the class
has completed for the quiet window, ``for: 10m`` later (one 1-minute step of tolerance).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor import conventions as cv
from tests.generate.conftest import REPO
from tests.generate.test_detection_slo import fired_minutes
from tests.support.real import require_binary

pytestmark = pytest.mark.real

CLASS = "extended-context"
QUIET_MIN = (2 * 1800 + 600) // 60  # the class's quiet window: 70 min
RULES = REPO / "alerts" / f"slo-{CLASS}.rules.yml"
PROBES = (
    'm3mon_probe_total{job="m3mon",instance="monitor:9464",endpoint="m3-extended",'
    f'class="{CLASS}",kind="chat",result="success",reason="none"}}'
)
STARTED = 'process_start_time_seconds{job="m3mon",instance="monitor:9464"}'
FIRING = f'count(ALERTS{{alertname="{cv.ALERT_METRIC_ABSENT}",alertstate="firing",class="{CLASS}",slo="availability"}})'


def _fired(tmp_path: Path, counter: str, minutes: int) -> list[int]:
    """The minutes (0 … ``minutes``) at which the class's availability ``SLOMetricAbsent`` fired, for
    a monitor started at time 0 whose probe counter reads ``counter`` (promtool's expanding
    notation, one sample a minute)."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    groups = yaml.load(RULES.read_text(), Loader=yaml.CSafeLoader)["groups"]
    wanted = [g for g in groups if g["name"] == f"m3mon-slo-{CLASS}-availability"]
    assert wanted and any(r.get("alert") == cv.ALERT_METRIC_ABSENT for r in wanted[0]["rules"])
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": wanted}, sort_keys=False))
    test: dict[str, Any] = {
        "interval": "1m",
        "input_series": [
            {"series": PROBES, "values": counter},
            {"series": STARTED, "values": f"0x{minutes}"},
        ],
        "promql_expr_test": [
            {"expr": FIRING, "eval_time": f"{m}m", "exp_samples": []} for m in range(minutes + 1)
        ],
    }
    doc = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [test]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1) and "error" not in out.lower().replace("failed", ""), out
    return fired_minutes(out)


def test_a_class_whose_first_probe_beat_the_first_scrape_is_not_absent(tmp_path: Path) -> None:
    """The first probe is counted before the first scrape (1 from the start), the second at minute
    30, the third at minute 60: a probe completed within every 70-minute window."""
    assert _fired(tmp_path, "1x29 2x29 3x20", 80) == []


def test_a_class_silent_since_its_first_probe_still_goes_absent(tmp_path: Path) -> None:
    """Only the first probe (before the first scrape) ever completes: nothing completed in the
    70 minutes after it, so the alert fires at 70 + 10 min (+ one step) and stays."""
    fired = _fired(tmp_path, f"1x{QUIET_MIN + 20}", QUIET_MIN + 20)
    assert fired, "SLOMetricAbsent never fired"
    assert QUIET_MIN + 10 <= fired[0] <= QUIET_MIN + 11, fired
    assert fired == list(range(fired[0], QUIET_MIN + 21)), fired


def test_a_started_monitor_with_no_probe_completed_goes_absent(tmp_path: Path) -> None:
    """The monitor has run 80 minutes and no probe of the class ever completed (its counters sit
    at 0): the class goes absent 10 minutes after its second sample (the window holds the
    monitor's whole life, and nothing in it), as before the fix."""
    fired = _fired(tmp_path, "0x80", 80)
    assert fired and 10 <= fired[0] <= 11, fired
    assert fired == list(range(fired[0], 81)), fired
