"""The store alerts' detection-time targets hold in the real promtool.

Same method as tests/generate/test_detection_operational.py (whose helpers this reuses): each
scenario of :mod:`monitor.generate.detection` for ``M3MonStoreDeadLetters`` and
``M3MonStoreSpoolGrowing`` is written by hand as the series Prometheus would scrape from the
monitor's exporter every 15 s, and ``promtool test rules`` runs it through the rules the real
``m3mon generate`` wrote. Expectations come from the target table only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate import detection
from monitor.generate import operational_rules as op
from tests.generate.test_detection_operational import (
    MINUTE,
    MON_LABELS,
    START,
    STEP,
    Check,
    Scenario,
    World,
    _verify,
    firing,
)

pytestmark = pytest.mark.timeout(180)

STORE_ALERTS = (cv.ALERT_STORE_DEAD_LETTERS, cv.ALERT_STORE_SPOOL_GROWING)
BACKLOG = f"{cv.STORE_BACKLOG}{{{MON_LABELS}}}"
WRITES_PER_STEP = 3  # 12 writes a minute: scrapes, probes, evaluations of the example config


def _dead_letters(reason: str) -> str:
    return f'{cv.STORE_DEAD_LETTERS}{{{MON_LABELS},reason="{reason}"}}'


def _target(key: str) -> int:
    (t,) = [t for t in detection.TARGETS if t.key == key]
    return t.within


def _dead_letter(_: object) -> tuple[World, list[Check]]:
    """Every reason's counter from 0 (as the exporter creates them); one data_error at START."""
    w = World(STEP, 30 * MINUTE)
    for reason in cv.DEAD_LETTER_REASONS:
        w.counter(_dead_letters(reason), [START] if reason == "data_error" else [])
    check = Check(
        cv.ALERT_STORE_DEAD_LETTERS,
        {"reason": "data_error"},
        START,
        _target("store-dead-letter"),
        30 * MINUTE,
    )
    return w, [check]


def _monitor_restart(_: object) -> tuple[World, list[Check]]:
    """Three dead letters at 0 s (alerted on then), a restart at START: the series are gone for a
    minute and come back from 0. The reset is not an increase."""
    start, end = 40 * MINUTE, 80 * MINUTE
    w = World(STEP, end)
    for reason in cv.DEAD_LETTER_REASONS:
        before = 3.0 if reason == "data_error" else 0.0
        w.gauge(
            _dead_letters(reason), lambda t, b=before: b if t < start else None if t < start + MINUTE else 0
        )
    return w, [Check(cv.ALERT_STORE_DEAD_LETTERS, {}, start, None, end)]


def _spool(away_for: int | None) -> Scenario:
    """The backlog grows by WRITES_PER_STEP every step from START; the database comes back after
    ``away_for`` seconds (None: never) and the spool is replayed in one flush."""

    def scenario(_: object) -> tuple[World, list[Check]]:
        end = 40 * MINUTE
        w = World(STEP, end)

        def backlog(t: int) -> float:
            away = t >= START and (away_for is None or t < START + away_for)
            return WRITES_PER_STEP * ((t - START) // STEP + 1) if away else 0

        w.gauge(BACKLOG, backlog)
        within = _target("store-spool-growing") if away_for is None else None
        return w, [Check(cv.ALERT_STORE_SPOOL_GROWING, {}, START, within, end)]

    return scenario


SCENARIOS: dict[str, Scenario] = {
    "store-dead-letter": _dead_letter,
    "store-monitor-restart": _monitor_restart,
    "store-spool-growing": _spool(None),
    "store-db-restart": _spool(5 * MINUTE),
}


def test_every_store_alert_has_targets_and_every_promise_a_scenario() -> None:
    keys = {t.key for t in detection.TARGETS if t.alert in STORE_ALERTS}
    keys |= {b.key for b in detection.BLIPS if b.alert in STORE_ALERTS}
    assert keys == set(SCENARIOS)
    assert {t.alert for t in detection.TARGETS if t.key in SCENARIOS} == set(STORE_ALERTS)
    assert set(STORE_ALERTS) <= set(cv.OPERATIONAL_ALERT_NAMES)


@pytest.mark.parametrize("key", sorted(SCENARIOS))
def test_detection(key: str, generated: Path, tmp_path: Path) -> None:
    world, checks = SCENARIOS[key](None)
    fired = firing(generated / "alerts" / "operational.rules.yml", world, checks, tmp_path)
    for check in checks:
        _verify(fired, world, check)


def _with_for(generated: Path, tmp_path: Path, alert: str, for_: str) -> Path:
    doc = yaml.safe_load((generated / "alerts" / "operational.rules.yml").read_text())
    (rule,) = [r for g in doc["groups"] for r in g["rules"] if r.get("alert") == alert]
    rule["for"] = for_
    path = tmp_path / "mutated.rules.yml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_scenarios_tell_a_wrong_rule(generated: Path, tmp_path: Path) -> None:
    """The spool scenarios fail a rule that waits too long, and one that tickets a short restart."""
    assert op.SPOOL_FOR == "10m"
    slow = _with_for(generated, tmp_path, cv.ALERT_STORE_SPOOL_GROWING, "20m")
    world, checks = _spool(None)(None)
    with pytest.raises(AssertionError, match="not firing 660 s after the fault"):
        _verify(firing(slow, world, checks, tmp_path), world, checks[0])
    eager = _with_for(generated, tmp_path, cv.ALERT_STORE_SPOOL_GROWING, "1m")
    world, checks = _spool(5 * MINUTE)(None)
    with pytest.raises(AssertionError, match="on a one-off event"):
        _verify(firing(eager, world, checks, tmp_path), world, checks[0])
