"""The monitor's own alerts keep their detection-time targets in the real promtool.

Same method as tests/generate/test_detection_operational.py (whose helpers this reuses): each
scenario of :mod:`monitor.generate.detection` for ``M3MonEvaluationStale``,
``M3MonProbesNotRunning`` and ``M3MonReceiverRejecting`` is written by hand as the series
Prometheus scrapes from the monitor's exporter every 15 s (``process_start_time_seconds``, the
job last-success gauges, the rejection counters), and ``promtool test rules`` runs it through the
rules the real ``m3mon generate`` wrote. promtool's clock starts at 0, so the process "started"
at 0 and a task that succeeds every run has last-success = the latest run time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate import detection
from monitor.generate import self_rules as sr
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

SELF_ALERTS = (
    cv.ALERT_EVALUATION_STALE,
    cv.ALERT_PROBES_NOT_RUNNING,
    cv.ALERT_RECEIVER_REJECTING,
    cv.ALERT_METRIC_FAMILY_GONE,
    cv.ALERT_EVENT_LOOP_BLOCKED,
)
STARTED = f"{cv.PROCESS_START_TIME}{{{MON_LABELS}}}"
CLASSES = {"interactive-32k": 30, "repo-analysis-128k": 300}  # probe intervals in the example


def _last_success(task: str) -> str:
    return f'{cv.JOB_LAST_SUCCESS}{{{MON_LABELS},task="{task}"}}'


def _rejected(receiver: str, reason: str) -> str:
    return f'{cv.RECEIVER_REJECTED}{{{MON_LABELS},receiver="{receiver}",reason="{reason}"}}'


def _target(key: str) -> int:
    (t,) = [t for t in detection.TARGETS if t.key == key]
    return t.within


def _runs(every: int, until: float | None = None, first: float = 0.0) -> Callable[[int], float]:
    """Last-success of a task succeeding every ``every`` s from ``first`` (0 before), up to ``until``."""

    def value(t: int) -> float:
        last = min(t, until) if until is not None else t
        return 0.0 if last < first else first + (last - first) // every * every

    return value


def _evaluation_stale(_: object) -> tuple[World, list[Check]]:
    w = World(STEP, 30 * MINUTE)
    w.gauge(STARTED, lambda t: 0)
    w.gauge(_last_success(cv.TASK_EVALUATE), _runs(15, until=START))
    return w, [Check(cv.ALERT_EVALUATION_STALE, {}, START, _target("evaluation-stale"), 30 * MINUTE)]


def _restart(series: str, every: int, first_success_after: int) -> tuple[World, int]:
    """The monitor restarts at START: its series vanish for a minute, then come back with a new
    process start time and last-success 0 until the first success ``first_success_after`` s after
    the restart."""
    w, back = World(STEP, 40 * MINUTE), START + MINUTE
    w.gauge(STARTED, lambda t: 0 if t < START else None if t < back else START + 30)
    after = _runs(every, first=START + 30 + first_success_after)
    w.gauge(series, lambda t: _runs(every)(t) if t < START else None if t < back else after(t))
    return w, back


def _evaluation_restart(_: object) -> tuple[World, list[Check]]:
    w, _ = _restart(_last_success(cv.TASK_EVALUATE), 15, 4 * MINUTE)
    return w, [Check(cv.ALERT_EVALUATION_STALE, {}, START, None, 40 * MINUTE)]


def _probes_not_running(_: object) -> tuple[World, list[Check]]:
    w = World(STEP, 30 * MINUTE)
    w.gauge(STARTED, lambda t: 0)
    for cls, every in CLASSES.items():
        w.gauge(
            _last_success(cv.probe_task(cls)), _runs(every, until=START if cls == "interactive-32k" else None)
        )
    checks = [
        Check(cv.ALERT_PROBES_NOT_RUNNING, {"class": "interactive-32k"}, START, _target("probes-not-running"),
              30 * MINUTE),
        Check(cv.ALERT_PROBES_NOT_RUNNING, {"class": "repo-analysis-128k"}, START, None, 30 * MINUTE),
    ]  # fmt: skip
    return w, checks


def _probes_restart(_: object) -> tuple[World, list[Check]]:
    w, _ = _restart(_last_success(cv.probe_task("repo-analysis-128k")), 300, 5 * MINUTE)
    return w, [Check(cv.ALERT_PROBES_NOT_RUNNING, {"class": "repo-analysis-128k"}, START, None, 40 * MINUTE)]


def _rejections(count: int) -> Scenario:
    """One refused Alertmanager webhook a minute from START (``count`` of them; None: forever)."""

    def scenario(_: object) -> tuple[World, list[Check]]:
        w = World(STEP, 40 * MINUTE)
        events = [START + i * MINUTE for i in range(count)]
        for receiver in cv.RECEIVERS:
            for reason in cv.REJECT_REASONS:
                hit = receiver == cv.RECEIVER_ALERTMANAGER and reason == "unauthorized"
                w.counter(_rejected(receiver, reason), events if hit else [])
        within = _target("receiver-rejecting") if count > 2 else None
        labels = {"receiver": cv.RECEIVER_ALERTMANAGER, "reason": "unauthorized"}
        return w, [Check(cv.ALERT_RECEIVER_REJECTING, labels, START, within, 40 * MINUTE)]

    return scenario


def _served(family: str, status: str, replacement: str = "") -> str:
    labels = f'endpoint="m3-repo",family="{family}",status="{status}",replacement="{replacement}"'
    return f"{cv.METRIC_FAMILY_SERVED}{{{MON_LABELS},{labels}}}"


KV, OLD_KV = "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"


def _family_gone(_: object) -> tuple[World, list[Check]]:
    """The upgrade at START renames the family: its ``served`` series (1) is replaced by a
    ``removed`` one (0) naming the name the page serves now, as the exporter publishes them."""
    w = World(STEP, 30 * MINUTE)
    w.gauge(_served(KV, "served"), lambda t: 1 if t <= START else None)  # the upgrade right after START
    w.gauge(_served(KV, "removed", OLD_KV), lambda t: 0 if t > START else None)
    labels = {"endpoint": "m3-repo", "family": KV, "status": "removed", "replacement": OLD_KV}
    return w, [Check(cv.ALERT_METRIC_FAMILY_GONE, labels, START, _target("family-gone"), 30 * MINUTE)]


def _family_never_served(_: object) -> tuple[World, list[Check]]:
    w = World(STEP, 30 * MINUTE)
    spec = "vllm:spec_decode_num_drafts_total"
    w.gauge(_served(spec, "flag"), lambda t: 0)
    return w, [Check(cv.ALERT_METRIC_FAMILY_GONE, {"family": spec}, START, None, 30 * MINUTE)]


def _family_restart(_: object) -> tuple[World, list[Check]]:
    w = World(STEP, 30 * MINUTE)
    w.gauge(_served(KV, "served"), lambda t: None if START <= t < START + 2 * MINUTE else 1)
    return w, [Check(cv.ALERT_METRIC_FAMILY_GONE, {"family": KV}, START, None, 30 * MINUTE)]


LAG_SUM = f"{cv.EVENT_LOOP_LAG}_sum{{{MON_LABELS}}}"
#: A busy monitor's lag: every 0.5 s tick 10 ms late, 0.02 s a second.
BUSY = 0.02


def _loop(
    lag: Callable[[int], float | None], within: int | None, end: int = 30 * MINUTE
) -> tuple[World, list[Check]]:
    """The lag histogram's sum as the exporter serves it (``lag(t)``; None: no sample, the monitor
    did not answer its scrape) and one check of the alert from START."""
    w = World(STEP, end)
    w.gauge(LAG_SUM, lag)
    return w, [Check(cv.ALERT_EVENT_LOOP_BLOCKED, {}, START, within, end)]


def _loop_held(_: object) -> tuple[World, list[Check]]:
    """Held for 40 s at START: no scrape answered meanwhile, then 40 s more lag."""
    hold = 40
    return _loop(lambda t: BUSY * t if t < START else None if t < START + hold else BUSY * t + hold,
                 _target("loop-held"))  # fmt: skip


def _loop_starved(_: object) -> tuple[World, list[Check]]:
    """From START every tick 0.3 s late: a tick each 0.8 s, 0.375 s of lag a second."""
    return _loop(
        lambda t: BUSY * t if t < START else BUSY * START + 0.375 * (t - START), _target("loop-starved")
    )


def _loop_pauses(_: object) -> tuple[World, list[Check]]:
    """Busy, and a 3 s pause every 5 min from the start: 12 s + 6 s in any 10 min."""
    return _loop(lambda t: BUSY * t + 3 * (t // (5 * MINUTE)), None, end=60 * MINUTE)


def _loop_restart(_: object) -> tuple[World, list[Check]]:
    """A long-running monitor (lag sum 500 s over days) held 10 s at START, restarted 2 min later."""
    back = START + 2 * MINUTE
    return _loop(lambda t: 500 + BUSY * t + (10 if t >= START + 10 else 0) if t < back
                 else None if t < back + MINUTE else BUSY * (t - back - MINUTE), None)  # fmt: skip


SCENARIOS: dict[str, Scenario] = {
    "evaluation-stale": _evaluation_stale,
    "evaluation-restart": _evaluation_restart,
    "probes-not-running": _probes_not_running,
    "probes-restart": _probes_restart,
    "receiver-rejecting": _rejections(30),
    "receiver-two": _rejections(2),
    "family-gone": _family_gone,
    "family-never-served": _family_never_served,
    "family-monitor-restart": _family_restart,
    "loop-held": _loop_held,
    "loop-starved": _loop_starved,
    "loop-pauses": _loop_pauses,
    "loop-restart": _loop_restart,
}


def test_every_self_alert_has_targets_and_every_promise_a_scenario() -> None:
    keys = {t.key for t in detection.TARGETS if t.alert in SELF_ALERTS}
    keys |= {b.key for b in detection.BLIPS if b.alert in SELF_ALERTS}
    assert keys == set(SCENARIOS)
    assert {t.alert for t in detection.TARGETS if t.key in SCENARIOS} == set(SELF_ALERTS)
    assert set(SELF_ALERTS) <= set(cv.OPERATIONAL_ALERT_NAMES)


@pytest.mark.parametrize("key", sorted(SCENARIOS))
def test_detection(key: str, generated: Path, tmp_path: Path) -> None:
    world, checks = SCENARIOS[key](None)
    fired = firing(generated / "alerts" / "operational.rules.yml", world, checks, tmp_path)
    for check in checks:
        _verify(fired, world, check)


def _replaced(generated: Path, tmp_path: Path, alert: str, old: str, new: str) -> Path:
    doc = yaml.safe_load((generated / "alerts" / "operational.rules.yml").read_text())
    (rule,) = [r for g in doc["groups"] for r in g["rules"] if r.get("alert") == alert]
    assert old in rule["expr"]
    rule["expr"] = rule["expr"].replace(old, new)
    path = tmp_path / "mutated.rules.yml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_scenarios_tell_a_wrong_rule(generated: Path, tmp_path: Path) -> None:
    """Without the process-start floor a restart looks stale; a threshold of 1 fires on a stray request."""
    assert sr.EVALUATION_STALE_AFTER == 300
    floor = f' or {cv.PROCESS_START_TIME}{{job="m3mon"}}'
    no_floor = _replaced(generated, tmp_path, cv.ALERT_EVALUATION_STALE, floor, "")
    world, checks = _evaluation_restart(None)
    with pytest.raises(AssertionError, match="on a one-off event"):
        _verify(firing(no_floor, world, checks, tmp_path), world, checks[0])
    eager = _replaced(generated, tmp_path, cv.ALERT_RECEIVER_REJECTING, ">= 3", ">= 1")
    world, checks = _rejections(2)(None)
    with pytest.raises(AssertionError, match="on a one-off event"):
        _verify(firing(eager, world, checks, tmp_path), world, checks[0])
    assert sr.LOOP_BLOCKED_SECONDS == 30
    eager = _replaced(generated, tmp_path, cv.ALERT_EVENT_LOOP_BLOCKED, ">= 30", ">= 10")
    world, checks = _loop_pauses(None)
    with pytest.raises(AssertionError, match="on a one-off event"):
        _verify(firing(eager, world, checks, tmp_path), world, checks[0])
