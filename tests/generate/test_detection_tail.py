"""``M3MonTailBottleneck`` keeps its detection-time target and its blips in the real promtool.

Same method as tests/generate/test_detection_operational.py (whose helpers this reuses): the
series Prometheus scrapes from the monitor's exporter every 15 s — the verdict state set of
interactive-32k (one series per verdict, docs/bottleneck.md) and the burn-rate gauges of its
latency SLOs — are written by hand, and ``promtool test rules`` runs them through the rules the
real ``m3mon generate`` wrote. Expectations come from the target table only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from monitor import conventions as cv
from monitor.bottleneck.rules import VERDICTS
from monitor.generate import detection
from tests.generate.test_detection_operational import (
    HOUR,
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

CLASS = "interactive-32k"
#: The class's latency SLOs in the example (name, sli) and a non-latency one that burns too.
LATENCY = (("ttft-p95", "ttft"), ("e2e-p95", "e2e"))
OTHER = ("availability", "availability")


def _verdict(name: str) -> str:
    return f'{cv.BOTTLENECK_VERDICT}{{{MON_LABELS},class="{CLASS}",verdict="{name}"}}'


def _burn(slo: str, sli: str, window: str) -> str:
    return f'{cv.SLO_BURN_RATE}{{{MON_LABELS},class="{CLASS}",slo="{slo}",sli="{sli}",window="{window}"}}'


def _world(verdict: Callable[[int], str], ttft_burn: Callable[[int], float], end: int = 90 * MINUTE) -> World:
    """The exporter's series: ``verdict(t)`` holds at t; the TTFT SLO's 1h burn is ``ttft_burn(t)``,
    the other latency SLO's 0.2, availability's 5 (not a latency SLO: never a reason to fire); the
    5m windows burn 10x throughout (the alert reads the 1h window only)."""
    w = World(STEP, end)
    for name in VERDICTS:
        w.gauge(_verdict(name), lambda t, n=name: 1.0 if verdict(t) == n else 0.0)
    for slo, sli in LATENCY:
        w.gauge(_burn(slo, sli, "1h"), ttft_burn if sli == "ttft" else (lambda t: 0.2))
        w.gauge(_burn(slo, sli, "5m"), lambda t: 10.0)
    w.gauge(_burn(*OTHER, "1h"), lambda t: 5.0)
    return w


def _target(key: str) -> int:
    (t,) = [t for t in detection.TARGETS if t.key == key]
    return t.within


def _from_start(name: str, until: int | None = None) -> Callable[[int], str]:
    return lambda t: name if t >= START and (until is None or t < until) else "none"


def _bottleneck(_: object) -> tuple[World, list[Check]]:
    w = _world(_from_start("scheduler_bound"), lambda t: 3.0 if t >= START else 0.3)
    labels = {"class": CLASS, "verdict": "scheduler_bound"}
    return w, [Check(cv.ALERT_TAIL_BOTTLENECK, labels, START, _target("tail-bottleneck"), 90 * MINUTE)]


def _no_burn(_: object) -> tuple[World, list[Check]]:
    w = _world(_from_start("gpu_bound", START + HOUR), lambda t: 0.8)
    return w, [Check(cv.ALERT_TAIL_BOTTLENECK, {"class": CLASS}, START, None, 90 * MINUTE)]


def _ten_minutes(_: object) -> tuple[World, list[Check]]:
    w = _world(_from_start("scheduler_bound", START + 10 * MINUTE), lambda t: 3.0 if t >= START else 0.3)
    return w, [Check(cv.ALERT_TAIL_BOTTLENECK, {"class": CLASS}, START, None, 60 * MINUTE)]


def _verdict_none(_: object) -> tuple[World, list[Check]]:
    w = _world(lambda t: "none", lambda t: 3.0 if t >= START else 0.3)
    return w, [Check(cv.ALERT_TAIL_BOTTLENECK, {"class": CLASS}, START, None, 90 * MINUTE)]


SCENARIOS: dict[str, Scenario] = {
    "tail-bottleneck": _bottleneck,
    "tail-no-burn": _no_burn,
    "tail-10m": _ten_minutes,
    "tail-none": _verdict_none,
}


def test_the_tail_alert_has_its_target_and_every_promise_a_scenario() -> None:
    keys = {t.key for t in detection.TARGETS if t.alert == cv.ALERT_TAIL_BOTTLENECK}
    keys |= {b.key for b in detection.BLIPS if b.alert == cv.ALERT_TAIL_BOTTLENECK}
    assert keys == set(SCENARIOS)


@pytest.mark.parametrize("key", sorted(SCENARIOS))
def test_detection(key: str, generated: Path, tmp_path: Path) -> None:
    world, checks = SCENARIOS[key](None)
    fired = firing(generated / "alerts" / "operational.rules.yml", world, checks, tmp_path)
    for check in checks:
        _verify(fired, world, check)


def _mutated(generated: Path, tmp_path: Path, old: str, new: str) -> Path:
    doc = yaml.safe_load((generated / "alerts" / "operational.rules.yml").read_text())
    (rule,) = [r for g in doc["groups"] for r in g["rules"] if r.get("alert") == cv.ALERT_TAIL_BOTTLENECK]
    assert old in rule["expr"], rule["expr"]
    rule["expr"] = rule["expr"].replace(old, new)
    path = tmp_path / "mutated.rules.yml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_blips_tell_a_wrong_rule(generated: Path, tmp_path: Path) -> None:
    """Without the burn condition a verdict alone tickets; without the quiet verdicts left out, a
    burning class whose verdict is none tickets; reading every SLI, availability's burn counts."""
    cases = [
        (r"\nand on (class)\nmax by (class) (", "\nor on (class)\nmax by (class) (", _no_burn),
        ('verdict!~"none|insufficient_evidence"', 'verdict=~".+"', _verdict_none),
        ('sli=~"ttft|', 'sli=~"availability|ttft|', _no_burn),
    ]
    for old, new, scenario in cases:
        world, checks = scenario(None)
        wrong = _mutated(generated, tmp_path, old.replace(r"\n", "\n"), new)
        with pytest.raises(AssertionError, match="on a one-off event"):
            _verify(firing(wrong, world, checks, tmp_path), world, checks[0])
