"""``VLLMEngineStalled`` keeps its detection bound and its never-fire promises in the real promtool.

Each scenario is written by hand as what the engine shows at every second (requests running and
waiting, the token counters, KV-cache usage) and sampled the way Prometheus scrapes it: every
15 s (or 30 s) at a chosen phase against the 15-s rule evaluations, a failed scrape as ``up`` 0
with nothing else, a paused one as no sample at all. The stall is timed from the instant the
engine stops, not from the first sample that shows it. Expectations come from the promise alone
(:mod:`monitor.generate.detection`, the issue's "two scrape intervals plus 30 s"): firing at some
evaluation no later than stall + bound and never at or before the stall; a blip never fires.
Every case is one ``tests`` entry of a single promtool run (promtool names the failing case).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate import detection
from tests.generate.test_detection_operational import _encode, _seconds, only_alerts
from tests.support.real import require_binary

pytestmark = pytest.mark.timeout(120)

EVAL = 15  # the generated prometheus.yml evaluates every 15 s
START = 300
IA, EXT = "m3-interactive", "m3-extended"  # scraped every 15 s and every 30 s in the example
SCRAPE = {IA: 15, EXT: 30}
ENGINE = 'job="vllm",endpoint="{ep}",instance="127.0.0.1:8000"'
V1 = ENGINE + f',model_name="{cv.M3_MODEL_ID}",engine="0"'


@dataclass
class Engine:
    """What the engine shows at second t; ``scraped(t)``: True sampled, False failed (up 0), None
    no sample at all (Prometheus paused). ``counters(t)`` None: the token counters are gone."""

    running: Callable[[int], float]
    waiting: Callable[[int], float]
    counters: Callable[[int], tuple[float, float] | None]  # (generation, prompt) totals
    kv: Callable[[int], float]
    scraped: Callable[[int], bool | None] = lambda t: True
    health: Callable[[int], float] = lambda t: 1.0


@dataclass
class Case:
    name: str
    endpoint: str
    engine: Engine
    end: int
    stall: int  # seconds: when the engine stopped (or the blip's start)
    within: int | None  # the bound, or None: never fires
    phase: int = 0  # the first scrape, seconds after 0 (evaluations at multiples of 15 s)


def _series(case: Case) -> dict[str, list[float | None]]:
    """Samples at 1-s resolution: a scrape every SCRAPE[endpoint] s from ``phase``, /health every 15 s."""
    e, ep, every = case.engine, case.endpoint, SCRAPE[case.endpoint]
    labels = V1.format(ep=ep)
    names = {"running": f"{cv.VLLM_RUNNING}{{{labels}}}", "waiting": f"{cv.VLLM_WAITING}{{{labels}}}",
             "gen": f"{cv.VLLM_GENERATION_TOKENS}{{{labels}}}", "prompt": f"{cv.VLLM_PROMPT_TOKENS}{{{labels}}}",
             "kv": f"{cv.VLLM_KV_USAGE}{{{labels}}}", "up": f"up{{{ENGINE.format(ep=ep)}}}",
             "health": f'{cv.HEALTH_UP}{{job="m3mon",instance="127.0.0.1:9464",endpoint="{ep}"}}'}  # fmt: skip
    out: dict[str, list[float | None]] = {n: [None] * (case.end + 1) for n in names.values()}
    for t in range(case.end + 1):
        if t % EVAL == 3:
            out[names["health"]][t] = e.health(t)
        if t % every != case.phase % every or (ok := e.scraped(t)) is None:
            continue
        out[names["up"]][t] = 1.0 if ok else 0.0
        if not ok:
            continue
        out[names["running"]][t], out[names["waiting"]][t], out[names["kv"]][t] = (
            e.running(t),
            e.waiting(t),
            e.kv(t),
        )
        counted = e.counters(t)
        if counted is not None:
            out[names["gen"]][t], out[names["prompt"]][t] = counted
    return out


_FAILURE = re.compile(
    r"name: (\S+),\s*\n\s*alertname: (\S+), time: (\S+),\s*\n\s*exp:\[\],\s*\n\s*got:\[(.*?)\n\s*\]", re.S
)


def fire_times(rules: Path, cases: list[Case], tmp: Path) -> dict[str, list[int]]:
    """{case: evaluation times at which the alert fired on its endpoint}, from one real promtool run."""
    runs = []
    for c in cases:
        series = [{"series": s, "values": _encode(v)} for s, v in _series(c).items()]
        first = max(0, c.stall - 2 * EVAL) // EVAL * EVAL
        runs.append(promtool_case(c.name, "1s", series, range(first, c.end + 1, EVAL)))
    rules = only_alerts(rules, {cv.ALERT_ENGINE_STALLED}, tmp)
    return promtool_fired(rules, runs, {c.name: c.endpoint for c in cases}, tmp)


def promtool_case(name: str, interval: str, series: list[dict[str, str]], checks: range) -> dict[str, object]:
    """One promtool ``tests`` entry expecting no stall alert at every time of ``checks``."""
    tests = [{"eval_time": f"{t}s", "alertname": cv.ALERT_ENGINE_STALLED, "exp_alerts": []} for t in checks]
    return {"name": name, "interval": interval, "input_series": series, "alert_rule_test": tests}


def promtool_fired(
    rules: Path, cases: list[dict[str, object]], endpoints: dict[str, str], tmp: Path
) -> dict[str, list[int]]:
    """Run ``cases`` in the real promtool: {case: times the alert fired on ``endpoints[case]``}."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    doc = {"rule_files": [str(rules)], "evaluation_interval": f"{EVAL}s", "tests": cases}
    path = tmp / "stall.test.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=100)
    out = proc.stdout + proc.stderr
    found = _FAILURE.findall(out)
    assert len(found) == out.count("alertname: "), f"unparsed promtool output:\n{out[:3000]}"
    assert (proc.returncode == 0) == (not found), f"promtool failed without alert failures:\n{out[:3000]}"
    fired: dict[str, list[int]] = {name: [] for name in endpoints}
    for name, _alert, when, got in found:
        if f'endpoint="{endpoints[name]}"' in got:
            fired[name].append(_seconds(when))
    return {k: sorted(v) for k, v in fired.items()}


# --- the engines ------------------------------------------------------------------------------------

GEN_RATE, PROMPT_RATE = 40.0, 300.0  # tokens/s while the engine moves


def _moving(t: int, since: int = 0) -> tuple[float, float]:
    return GEN_RATE * (t - since), PROMPT_RATE * (t - since)


def _kv(t: int) -> float:
    return 0.3 + 0.01 * (t % 7)  # a moving engine's KV usage goes up and down


def stalled(at: int) -> Engine:
    """Three requests decode until ``at``; then nothing moves and one request queues every 10 s."""
    return Engine(running=lambda t: 3, waiting=lambda t: max(0, (t - at) // 10),
                  counters=lambda t: _moving(min(t, at)), kv=lambda t: _kv(min(t, at)))  # fmt: skip


def _stall_cases(ep: str, phases: tuple[int, ...], offsets: tuple[int, ...], key: str) -> list[Case]:
    """The stall ``offset`` s after a scrape, the scrapes at ``phase`` s past the evaluations."""
    (target,) = [t for t in detection.TARGETS if t.key == key]
    return [Case(f"{key}-phase{p}-after{d}", ep, stalled(START + p + d), START + 180, START + p + d,
                 target.within, phase=p) for p in phases for d in offsets]  # fmt: skip


def _blip(name: str, engine: Engine, phases: tuple[int, ...] = (7,), end: int = START + 480) -> list[Case]:
    return [Case(f"{name}-phase{p}", IA, engine, end, START, None, phase=p) for p in phases]


def _restart_counters(t: int) -> tuple[float, float]:
    """Moving, restarted at START + 5 (between scrapes) and at START + 300 (one failed scrape)."""
    since = 0 if t < START + 5 else START + 5 if t < START + 300 else START + 310
    return _moving(t, since)


def _prefill(t: int) -> tuple[float, float]:
    """Idle until START, one 500 000-token prompt prefills alone for 120 s, then decodes."""
    return (0.0, 0.0) if t < START + 120 else (GEN_RATE * (t - START - 120) + 1, 500_000.0)


def _first_request(t: int) -> tuple[float, float]:
    return (0.0, 0.0) if t < START + 20 else (GEN_RATE * (t - START - 20) + 1, 3000.0)


PAUSE = range(START, START + 300)
BLIPS: dict[str, list[Case]] = {
    "stall-idle": _blip("stall-idle", Engine(lambda t: 0, lambda t: 0, lambda t: (5e6, 9e6), lambda t: 0.0)),
    "stall-slow": _blip("stall-slow", Engine(lambda t: 3, lambda t: 0, lambda t: (2.0 * (t // 15), 900.0), _kv),
                        (0, 7)),
    "stall-paused-scrape": _blip("stall-paused-scrape", Engine(
        lambda t: 3, lambda t: 0, _moving, _kv, scraped=lambda t: None if t in PAUSE else True)),
    "stall-failed-scrape": _blip("stall-failed-scrape", Engine(
        lambda t: 3, lambda t: 0, lambda t: _moving(t), _kv, scraped=lambda t: t not in PAUSE)),
    "stall-counters-gone": _blip("stall-counters-gone", Engine(
        lambda t: 3, lambda t: 0, lambda t: _moving(t) if t < START else None, lambda t: _kv(min(t, START)))),
    "stall-restart": _blip("stall-restart", Engine(
        lambda t: 3, lambda t: 0, _restart_counters, _kv,
        scraped=lambda t: not START + 295 <= t < START + 310), (0, 7)),
    "stall-long-prefill": _blip("stall-long-prefill", Engine(
        lambda t: 1 if t >= START else 0, lambda t: 0, _prefill,
        lambda t: 0.02 * min(max(0, t - START) // 8, 15)), (0, 7)),  # KV blocks per 8-s chunk
    "stall-first-request": _blip("stall-first-request", Engine(  # KV flat: as in the simulator, which
        lambda t: 1 if t >= START else 0, lambda t: 0, _first_request, lambda t: 0.05), (0, 7)),  # allocates early
    "stall-health-down": _blip("stall-health-down", Engine(
        stalled(START).running, stalled(START).waiting, stalled(START).counters, stalled(START).kv,
        health=lambda t: 0.0 if t >= START else 1.0)),
}  # fmt: skip

#: Target or blip key -> its cases (several scrape phases and stall offsets each).
SCENARIOS: dict[str, list[Case]] = {
    "engine-stalled": _stall_cases(IA, (0, 6, 11), (1, 14), "engine-stalled"),
    "engine-stalled-30s": _stall_cases(EXT, (0, 17), (1, 29), "engine-stalled-30s"),
    **BLIPS,
}


@pytest.fixture(scope="module")
def fired(generated: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[int]]:
    cases = [c for cs in SCENARIOS.values() for c in cs]
    return fire_times(generated / "alerts" / "operational.rules.yml", cases, tmp_path_factory.mktemp("stall"))


def test_every_stall_promise_has_cases() -> None:
    keys = {t.key for t in detection.TARGETS if t.alert == cv.ALERT_ENGINE_STALLED}
    keys |= {b.key for b in detection.BLIPS if b.alert == cv.ALERT_ENGINE_STALLED}
    assert keys == set(SCENARIOS)
    for key in ("engine-stalled", "engine-stalled-30s"):
        (t,) = [t for t in detection.TARGETS if t.key == key]
        every = SCRAPE[SCENARIOS[key][0].endpoint]
        assert t.within == 2 * every + 30  # the bound, not a number the rule chose


@pytest.mark.parametrize("key", sorted(SCENARIOS))
def test_stall_detection(key: str, fired: dict[str, list[int]]) -> None:
    for case in SCENARIOS[key]:
        times = fired[case.name]
        if case.within is None:
            assert not times, f"{case.name}: fired at {times} s"
            continue
        assert times, f"{case.name}: never fired"
        assert times[0] > case.stall, (
            f"{case.name}: fired at {times[0]} s, before the stall at {case.stall} s"
        )
        assert times[0] - case.stall <= case.within, (
            f"{case.name}: first fired {times[0] - case.stall} s late"
        )
        last = range(times[0], case.end + 1, EVAL)
        assert times == [t for t in last if t >= times[0]][: len(times)] and times[-1] >= case.end - EVAL
