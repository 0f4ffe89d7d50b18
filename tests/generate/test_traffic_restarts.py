"""A ``source: traffic`` SLO through monitor restarts and a crash-looping vLLM, in the real promtool.

Real-traffic requests are counted by the monitor itself (its span receiver raises
``m3mon_traffic_requests_total``), so the process whose restart resets a traffic SLO's counters
is the monitor's, never vLLM's. The oracle is the definition in docs/slo-events.md ("Restarts"),
written here from the page, not from the rules:

* a step reads, per target, the latest scrape at or before its instant (none when that scrape
  failed: the next step measures across);
* when the process read now is the one the previous step read, the step counts what its counters
  rose by; when another process is read now (it started after the samples the previous step read),
  the step counts that process's whole count, valid and bad together;
* so a restart loses only what the old process counted after the last step's reading, and a
  process that lived between two readings is lost whole.

The generated rule group of one traffic SLO runs on a 1 s grid (the monitor scraped every 15 s at
second 7 of each quarter-minute); every step's valid and bad events must equal the oracle's, and
no alert may fire in a world whose counters rose by no bad event.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor import conventions as cv
from monitor.config import parse_config
from monitor.generate.slo_rules import slo_groups
from monitor.model import build_model
from tests.slo_agreement.prometheus import parse_output
from tests.slo_agreement.series import STALE, Timeline, Value, input_series
from tests.support.real import require_binary

pytestmark = pytest.mark.real

CONFIG = """\
version: m3mon/v1
endpoints:
  - name: m3-a
    base_url: http://127.0.0.1:9
    backend: vllm
    model: MiniMaxAI/MiniMax-M3
    classes: [chat]
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    probe: {interval: 30s, timeout: 60s}
    slos:
      - {name: goodput, sli: goodput, objective: 99, source: traffic}
"""
IDS = 'class="chat",slo="goodput"'
MONITOR = (("instance", "monitor:9464"), ("job", "m3mon"))
VLLM = (("endpoint", "m3-a"), ("instance", "m3-a:8000"), ("job", "vllm"))
TRAFFIC = (("class", "chat"), ("endpoint", "m3-a"), ("priority", "default"), ("tenant", "other"))
SCRAPE_EVERY, SCRAPE_PHASE = 15, 7


@dataclass(frozen=True)
class World:
    """``minutes`` of traffic seen by a monitor whose processes live over ``monitor`` spans
    ``[start, end)`` (s); ``vllm_starts``: when vLLM's processes started; ``requests``: (second,
    bad) of each real request, counted by the monitor process alive then (lost while none is)."""

    minutes: int
    monitor: tuple[tuple[int, int], ...]
    vllm_starts: tuple[int, ...]
    requests: tuple[tuple[int, bool], ...]

    def process(self, t: int) -> int | None:
        """The monitor process alive at second ``t`` (its index), None while it is down."""
        return next((i for i, (a, b) in enumerate(self.monitor) if a <= t < b), None)

    def counted(self, p: int, t: int) -> tuple[int, int]:
        """(valid, bad) monitor process ``p`` has counted by second ``t``."""
        mine = [bad for s, bad in self.requests if self.process(s) == p and s <= t]
        return len(mine), sum(mine)

    def scrapes(self) -> list[int]:
        return list(range(SCRAPE_PHASE, self.minutes * 60 + 1, SCRAPE_EVERY))


def timeline(w: World) -> Timeline:
    """Prometheus' samples of both targets: a failed scrape of the monitor (no process) writes
    staleness markers; vLLM serves only its start time (the one vLLM series the rules read)."""
    seconds = w.minutes * 60 + 1
    tl: Timeline = {}

    def put(name: str, labels: tuple[tuple[str, str], ...], t: int, value: Value) -> None:
        tl.setdefault((name, tuple(sorted(labels))), [None] * seconds)[t] = value

    monitor = [(cv.PROCESS_START_TIME, MONITOR)] + [
        (cv.TRAFFIC_TOTAL, (*MONITOR, *TRAFFIC, ("good", good))) for good in ("true", "false")
    ]
    for t in w.scrapes():
        put(cv.PROCESS_START_TIME, VLLM, t, float(max(s for s in w.vllm_starts if s <= t)))
        p = w.process(t)
        if p is None:
            for name, labels in monitor:
                put(name, labels, t, STALE)
            continue
        valid, bad = w.counted(p, t)
        for (name, labels), value in zip(monitor, (w.monitor[p][0], valid - bad, bad), strict=True):
            put(name, labels, t, float(value))
    return tl


def oracle(w: World) -> dict[int, tuple[int, int]]:
    """Each step's (valid, bad) events by the definition (module docstring); minutes without one
    are left out."""
    out: dict[int, tuple[int, int]] = {}
    before: tuple[int, int, int] | None = None  # (process, valid, bad) the last recorded step read
    for m in range(w.minutes + 1):
        latest = max((t for t in w.scrapes() if t <= m * 60), default=None)
        p = None if latest is None else w.process(latest)
        if latest is None or p is None:
            continue  # nothing read (a stale target): the next step measures across
        valid, bad = w.counted(p, latest)
        if before is not None:
            same = before[0] == p
            out[m] = (valid - before[1], bad - before[2]) if same else (valid, bad)
        before = (p, valid, bad)
    return out


def _rules(tmp_path: Path) -> None:
    model = build_model(parse_config(CONFIG, "monitor.yaml"))
    groups = [g.render(model.alerting) for g in slo_groups(model)]
    assert [g["name"] for g in groups] == ["m3mon-slo-chat-goodput"]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))


STEPS = " or ".join(
    f'label_replace(sum({cv.slo_step_events_record(k)}{{{IDS}}}), "kind", "{k}", "", "")'
    for k in ("valid", "bad")
)
FIRING = f'ALERTS{{alertstate="firing",{IDS}}}'


def run(tmp_path: Path, w: World) -> tuple[dict[int, tuple[float, float]], dict[int, list[str]]]:
    """Each minute's step events (valid, bad) and firing alerts, as the generated rules record them."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    _rules(tmp_path)
    minutes = range(w.minutes + 1)
    test: dict[str, Any] = {
        "interval": "1s",
        "input_series": input_series(timeline(w)),
        "promql_expr_test": [
            {"expr": q, "eval_time": f"{m}m", "exp_samples": []} for m in minutes for q in (STEPS, FIRING)
        ],
    }
    doc = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [test]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1) and (proc.returncode == 0 or "FAILED:" in out), out[-3000:]
    got = parse_output(out)
    steps: dict[int, tuple[float, float]] = {}
    for m in minutes:
        kinds = {lab["kind"]: v for lab, v in got.get((STEPS, m), [])}
        if kinds:
            steps[m] = (kinds.get("valid", 0.0), kinds.get("bad", 0.0))
    firing = {m: sorted(lab["alertname"] for lab, _ in got.get((FIRING, m), [])) for m in minutes}
    return steps, {m: f for m, f in firing.items() if f}


def _requests(spans: list[tuple[int, int, int, int]]) -> tuple[tuple[int, bool], ...]:
    """Requests over ``(start, end, per_second, bad_every)`` spans: ``per_second`` each second,
    every ``bad_every``-th of them bad (0: none)."""
    out, n = [], 0
    for start, end, rate, bad_every in spans:
        for t in range(start, end):
            for _ in range(rate):
                n += 1
                out.append((t, bad_every > 0 and n % bad_every == 0))
    return tuple(out)


#: The monitor crash-loops under a traffic surge: it restarts at 15:00 (down 5 s), and that young
#: process dies at 16:40; the next one, up at 16:43 under six times the traffic, has counted more
#: by the 17:00 step's reading (16:52) than the one before it had by the 16:00 step's (15:52), with
#: as few bad requests as ever. vLLM restarts meanwhile and the monitor sees none of it.
MONITOR_LOOP = World(
    minutes=24,
    monitor=((-300, 900), (905, 1000), (1003, 10_000)),
    vllm_starts=(-3600, 400, 430, 470, 1010),
    requests=_requests([(0, 1000, 1, 50), (1000, 1200, 6, 50), (1200, 1440, 1, 50)]),
)
#: vLLM crash-loops (five processes in four minutes) while the monitor runs on. The monitor's
#: counters hold 300 bad requests from before the world (an incident long past) and count none
#: now: every step counts only what they rose by, and nothing may alert.
VLLM_LOOP = World(
    minutes=20,
    monitor=((-7200, 10_000),),
    vllm_starts=(-3600, 300, 340, 390, 455, 500),
    requests=((-3000, True),) * 300 + _requests([(-3000, -2000, 1, 0), (0, 1200, 3, 0)]),
)


@pytest.mark.parametrize("world", [MONITOR_LOOP, VLLM_LOOP], ids=["monitor-crash-loop", "vllm-crash-loop"])
def test_each_step_counts_what_the_definition_counts(tmp_path: Path, world: World) -> None:
    expected = oracle(world)
    assert all(bad <= valid for valid, bad in expected.values())
    steps, firing = run(tmp_path, world)
    wrong = {
        m: (steps.get(m), expected.get(m))
        for m in sorted({*steps, *expected})
        if steps.get(m) != expected.get(m)
    }
    if not any(bad for _, bad in expected.values()):
        assert not firing, f"alerts without a bad event: {firing}"
    assert not wrong, f"minute: (rules, definition) {wrong}"
