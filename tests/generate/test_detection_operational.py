"""The detection-time targets of the operational alerts hold in the real promtool.

Every promise of :mod:`monitor.generate.detection` is replayed here: the scenario is written by
hand as the series Prometheus would ingest (at the example configuration's probe rates, sampled
and evaluated every 15 s like the generated prometheus.yml, or every minute where a day or a week
of history is needed), and ``promtool test rules`` runs it through the rules the real
``m3mon generate`` wrote. Expectations come from the target table only:

* a :class:`~monitor.generate.detection.Target` must not be firing at or before the scenario's
  start and must be firing at start + target;
* a :class:`~monitor.generate.detection.Blip` must never fire within a bounded horizon.

To see *when* an alert fires, every evaluation step of the checked range is a promtool alert test
expecting no alert; promtool lists the steps where one fired, and the first is the measured
first-fire time.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate import detection
from monitor.model import Model, load_model
from tests.generate.conftest import EXAMPLE, REPO
from tests.support.real import require_binary

pytestmark = pytest.mark.timeout(180)

STEP = 15  # seconds: the generated prometheus.yml scrapes and evaluates every 15 s
MINUTE, HOUR, DAY, WEEK = 60, 3600, 86400, 604800
START = 10 * MINUTE  # when the fault starts in the short scenarios
IA, REPO_EP = "m3-interactive", "m3-repo"
VLLM_LABELS = 'job="vllm",endpoint="{ep}",instance="127.0.0.1:8000"'
MON_LABELS = 'job="m3mon",instance="127.0.0.1:9464"'


# --- hand-written input series ------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """``alert`` (with ``labels``) must fire within ``within`` s of ``start``, or never if None."""

    alert: str
    labels: dict[str, str]
    start: int
    within: int | None
    until: int  # the last evaluation checked (seconds)


@dataclass
class World:
    """Samples every ``step`` seconds from 0 to ``end``; ``series`` maps a series to its samples."""

    step: int
    end: int
    series: dict[str, list[float | None]] = field(default_factory=dict)

    @property
    def times(self) -> range:
        return range(0, self.end + 1, self.step)

    def gauge(self, name: str, value: Callable[[int], float | None]) -> None:
        self.series[name] = [value(t) for t in self.times]

    def counter(self, name: str, events: Iterable[float], per_event: float = 1.0) -> None:
        """A counter incremented by ``per_event`` at each event time (seen at the next sample)."""
        at = sorted(events)
        self.series[name] = [per_event * sum(1 for e in at if e <= t) for t in self.times]

    def rate_counter(self, name: str, per_minute: Callable[[int], float]) -> None:
        """A counter growing at ``per_minute(t)`` per minute during each step ending at t."""
        total, values = 0.0, list[float | None]()
        for t in self.times:
            total += per_minute(t) * self.step / MINUTE if t else 0.0
            values.append(total)
        self.series[name] = values


def _num(x: float) -> str:
    return repr(float(x)).removesuffix(".0")


def _encode(values: list[float | None]) -> str:
    """promtool's value notation; runs of a constant step compressed to ``a+bxn`` (``_xn``: missing)."""
    out, i = [], 0
    while i < len(values):
        j = i
        if values[i] is None:
            while j + 1 < len(values) and values[j + 1] is None:
                j += 1
            out.append(f"_x{j - i + 1}")
        else:
            d: float | None = None
            while j + 1 < len(values) and (nxt := values[j + 1]) is not None:
                step = nxt - values[j]  # type: ignore[operator]
                if d is not None and abs(step - d) > 1e-9:
                    break
                d, j = step, j + 1
            d = d or 0.0
            out.append(f"{_num(values[i])}{'-' if d < 0 else '+'}{_num(abs(d))}x{j - i}")  # type: ignore[arg-type]
        i = j + 1
    return " ".join(out)


# --- running promtool and reading what fired --------------------------------------------------------

_FAILURE = re.compile(r"alertname: (\S+), time: (\S+),\s*\n\s*exp:\[\],\s*\n\s*got:\[(.*?)\n\s*\]", re.S)
_LABELS = re.compile(r"Labels:\{(.*?)\}\n")
_PAIR = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_UNIT = {"ms": 0.001, "s": 1, "m": MINUTE, "h": HOUR, "d": DAY, "w": WEEK, "y": 365 * DAY}


def _seconds(duration: str) -> int:
    parts = re.findall(r"(\d+)(ms|[smhdwy])", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, f"unreadable promtool time {duration!r}"
    return round(sum(int(n) * _UNIT[u] for n, u in parts))


def _checked_times(world: World, check: Check) -> list[int]:
    first = max(check.start - 2 * world.step, 0)
    return list(range(first, check.until + 1, world.step))


def only_alerts(rules: Path, alerts: set[str], tmp: Path) -> Path:
    """The generated rules of ``alerts`` and the records of their groups, unchanged. (promtool
    evaluates every rule of the file at every step from 0: a week of 1-minute steps over all
    operational rules takes half a minute.)"""
    doc = yaml.safe_load(rules.read_text())
    groups = [
        {**g, "rules": [r for r in g["rules"] if r.get("alert") in alerts or "record" in r]}
        for g in doc["groups"]
        if any(r.get("alert") in alerts for r in g["rules"])
    ]
    path = tmp / rules.name
    path.write_text(yaml.safe_dump({"groups": [g for g in groups if g["rules"]]}, sort_keys=False))
    return path


def _test_file(rules: Path, world: World, checks: list[Check], tmp: Path) -> Path:
    """A promtool test file: the world's series, and "nothing fires" at every checked step."""
    tests = [
        {"eval_time": f"{t}s", "alertname": c.alert, "exp_alerts": []}
        for c in checks
        for t in _checked_times(world, c)
    ]
    series = [{"series": s, "values": _encode(v)} for s, v in world.series.items()]
    doc = {
        "rule_files": [str(only_alerts(rules, {c.alert for c in checks}, tmp))],
        "evaluation_interval": f"{world.step}s",
        "tests": [{"interval": f"{world.step}s", "input_series": series, "alert_rule_test": tests}],
    }
    path = tmp / "detection.test.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    return path


Fired = dict[int, list[tuple[str, dict[str, str]]]]


def firing(rules: Path, world: World, checks: list[Check], tmp: Path) -> Fired:
    """{evaluation time: [(alert, labels) firing]} at every checked step, from a real promtool run."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    path = _test_file(rules, world, checks, tmp)
    proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=150)
    out = proc.stdout + proc.stderr
    found = _FAILURE.findall(out)
    assert len(found) == out.count("alertname: "), f"unparsed promtool output:\n{out}"
    assert (proc.returncode == 0) == (not found), f"promtool failed without alert failures:\n{out}"
    fired: Fired = {}
    for alert, when, got in found:
        for labels in _LABELS.findall(got + "\n"):
            fired.setdefault(_seconds(when), []).append((alert, dict(_PAIR.findall(labels))))
    return fired


def fire_times(fired: Fired, check: Check) -> list[int]:
    """The checked evaluation times at which ``check.alert`` fired with ``check.labels``."""
    return sorted(
        t
        for t, alerts in fired.items()
        if any(a == check.alert and check.labels.items() <= labels.items() for a, labels in alerts)
    )


# --- scenarios ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> Model:
    return load_model(REPO / EXAMPLE)


def _probe_key(ep: str, klass: str, kind: str, reason: str | None) -> str:
    result, why = ("success", cv.REASON_NONE) if reason is None else ("failure", reason)
    return (
        f'{cv.PROBE_TOTAL}{{{MON_LABELS},endpoint="{ep}",class="{klass}",kind="{kind}",'
        f'result="{result}",reason="{why}"}}'
    )


Outcome = Callable[[str, str, int, float], str | None]  # (class, kind, n-th run, time) -> reason


@dataclass(frozen=True)
class Restart:
    """The monitor is killed at ``at`` and serves again from ``back``: nothing is exported (nor
    probed) in between, and its counters start again from 0."""

    at: int
    back: int

    def value(self, events: list[float], t: int) -> float | None:
        if t < self.at:
            return float(sum(1 for e in events if e <= t))
        if t < self.back:
            return None
        return float(sum(1 for e in events if self.back <= e <= t))

    def gauge(self, value: Callable[[int], float | None]) -> Callable[[int], float | None]:
        return lambda t: None if self.at <= t < self.back else value(t)


def probes(world: World, model: Model, ep: str, outcome: Outcome, reasons: tuple[str, ...], *,
           health: Callable[[int], float | None] = lambda t: 1,
           restart: Restart | None = None) -> None:  # fmt: skip
    """Every probe of ``ep`` at its class's interval (each kind offset by a few seconds), /health
    as ``health(t)`` (up by default), the monitor restarting as ``restart`` says.

    ``outcome`` gives each run's failure reason (None: success). Every series of ``reasons`` exists
    from 0, as the exporter creates them.
    """
    endpoint = next(e for e in model.endpoints if e.name == ep)
    offset = 0
    for klass in (model.request_class(c) for c in endpoint.classes):
        for kind in klass.probe.kinds:
            runs = [
                offset + i * klass.probe.interval for i in range(int(world.end // klass.probe.interval) + 1)
            ]
            if restart is not None:
                runs = [t for t in runs if not restart.at <= t < restart.back]
            by_reason: dict[str | None, list[float]] = {None: [], **{r: [] for r in reasons}}
            for n, t in enumerate(runs):
                by_reason.setdefault(outcome(klass.name, kind, n, t), []).append(t)
            for reason, times in by_reason.items():
                name = _probe_key(ep, klass.name, kind, reason)
                if restart is None:
                    world.counter(name, times)
                else:
                    world.series[name] = [restart.value(times, t) for t in world.times]
            offset = (offset + 7) % 30
    up = health if restart is None else restart.gauge(health)
    world.gauge(f'{cv.HEALTH_UP}{{{MON_LABELS},endpoint="{ep}"}}', up)


def maintenance(world: World, model: Model, ep: str, start: int, end: int, restart: Restart | None) -> None:
    """One maintenance occurrence ``(start, end]`` of every class ``ep`` serves, as the monitor
    publishes it: the current boundaries until the end, the previous ones for an hour after."""
    endpoint = next(e for e in model.endpoints if e.name == ep)
    for klass in endpoint.classes:
        labels = (f'{MON_LABELS},maintenance="upgrade",class="{klass}",endpoint="{ep}",'
                  'whole_class="false",whole_endpoint="true"')  # fmt: skip
        for names, shown in (
            ((cv.MAINTENANCE_START, cv.MAINTENANCE_END), lambda t: t <= end),
            ((cv.MAINTENANCE_PREVIOUS_START, cv.MAINTENANCE_PREVIOUS_END), lambda t: end < t <= end + HOUR),
        ):
            for name, value in zip(names, (start, end), strict=True):

                def gauge(t: int, v: float = value, on: Callable[[int], bool] = shown) -> float | None:
                    return v if on(t) else None

                world.gauge(f"{name}{{{labels}}}", gauge if restart is None else restart.gauge(gauge))


def _every_other_from(start: int) -> Outcome:
    first: dict[tuple[str, str], int] = {}

    def outcome(klass: str, kind: str, n: int, t: float) -> str | None:
        if t < start:
            return None
        k = first.setdefault((klass, kind), n)
        return "http_status" if (n - k) % 2 == 0 else None

    return outcome


Scenario = Callable[[Model], tuple[World, list[Check]]]


def _probes_failing(m: Model) -> tuple[World, list[Check]]:
    w = World(STEP, 30 * MINUTE)
    probes(w, m, IA, _every_other_from(START), ("http_status", cv.REASON_MONITOR_ERROR))
    return w, [
        Check(cv.ALERT_PROBES_FAILING, {"endpoint": IA}, START, _target("probes-failing"), 20 * MINUTE)
    ]


def _probes_failing_sparse(m: Model) -> tuple[World, list[Check]]:
    w, start = World(STEP, 60 * MINUTE), 30 * MINUTE
    probes(w, m, REPO_EP, lambda c, k, n, t: "http_status" if t >= start else None, ("http_status",))
    check = Check(
        cv.ALERT_PROBES_FAILING, {"endpoint": REPO_EP}, start, _target("probes-failing-sparse"), 50 * MINUTE
    )
    return w, [check]


def _probes_failing_restart(m: Model) -> tuple[World, list[Check]]:
    """As probes-failing, and the monitor restarts 2 minutes in (away 30 s): detection is unchanged."""
    w = World(STEP, 30 * MINUTE)
    restart = Restart(START + 2 * MINUTE, START + 2 * MINUTE + 30)
    probes(w, m, IA, _every_other_from(START), ("http_status", cv.REASON_MONITOR_ERROR), restart=restart)
    return w, [
        Check(
            cv.ALERT_PROBES_FAILING, {"endpoint": IA}, START, _target("probes-failing-restart"), 20 * MINUTE
        )
    ]


def _probes_failing_after_maintenance(m: Model) -> tuple[World, list[Check]]:
    """As probes-failing, 4 minutes after a 10-minute maintenance of m3-interactive (healthy
    inside it) ended: its classes' own probe timeouts (60-120 s) + 1 min later the alert sees again.
    With the longest timeout of every class (extended-context's 600 s) it was blind for 11 min."""
    w, start, end = World(STEP, 40 * MINUTE), 10 * MINUTE, 20 * MINUTE
    onset = end + 4 * MINUTE
    probes(w, m, IA, _every_other_from(onset), ("http_status", cv.REASON_MONITOR_ERROR))
    maintenance(w, m, IA, start, end, None)
    target = _target("probes-failing-after-maintenance")
    return w, [Check(cv.ALERT_PROBES_FAILING, {"endpoint": IA}, onset, target, 40 * MINUTE)]


def _probes_after_outage(m: Model) -> tuple[World, list[Check]]:
    """Both pools down for 6 min from 30 min: m3-interactive refuses connections, m3-repo sits
    behind a gateway that answers 503 (its /health too); the monitor's /health check (every 15 s)
    sees the outage 15 s late and the recovery 15 s late."""
    w, start, end = World(STEP, 80 * MINUTE), 30 * MINUTE, 36 * MINUTE
    for ep, reason in ((IA, "connect_error"), (REPO_EP, "http_status")):

        def down(c: str, k: str, n: int, t: float, why: str = reason) -> str | None:
            return why if start <= t < end else None

        probes(w, m, ep, down, (reason,), health=lambda t: 0 if start + 15 <= t < end + 15 else 1)
    return w, [
        Check(cv.ALERT_PROBES_FAILING, {"endpoint": ep}, start, None, 80 * MINUTE) for ep in (IA, REPO_EP)
    ]


def _probes_maintenance_restart(m: Model) -> tuple[World, list[Check]]:
    """Every m3-interactive probe fails inside a 20-minute maintenance of the endpoint; a minute
    after it ends the monitor restarts (away 30 s). Checked from the end of the maintenance (the
    alert is inhibited in Alertmanager while it lasts)."""
    w, start, end = World(STEP, 70 * MINUTE), 10 * MINUTE, 30 * MINUTE
    restart = Restart(end + MINUTE, end + MINUTE + 30)

    def broken(c: str, k: str, n: int, t: float) -> str | None:
        return "http_status" if start < t <= end else None

    probes(w, m, IA, broken, ("http_status",), restart=restart)
    maintenance(w, m, IA, start, end, restart)
    return w, [Check(cv.ALERT_PROBES_FAILING, {"endpoint": IA}, end, None, 70 * MINUTE)]


def _probes_one_failure(m: Model) -> tuple[World, list[Check]]:
    w, failed = World(STEP, 40 * MINUTE), list[float]()

    def outcome(klass: str, kind: str, n: int, t: float) -> str | None:
        if t >= START and not failed and kind == "tool_call":
            failed.append(t)
            return "http_status"
        return None

    probes(w, m, IA, outcome, ("http_status",))
    return w, [Check(cv.ALERT_PROBES_FAILING, {"endpoint": IA}, START, None, 40 * MINUTE)]


def _probes_one_round(m: Model) -> tuple[World, list[Check]]:
    w = World(STEP, 40 * MINUTE)
    probes(w, m, IA, lambda c, k, n, t: "timeout" if START <= t < START + 30 else None, ("timeout",))
    return w, [Check(cv.ALERT_PROBES_FAILING, {"endpoint": IA}, START, None, 40 * MINUTE)]


def _probes_sparse_one_round(m: Model) -> tuple[World, list[Check]]:
    w, start = World(STEP, 75 * MINUTE), 30 * MINUTE
    probes(
        w, m, REPO_EP, lambda c, k, n, t: "http_status" if start <= t < start + 60 else None, ("http_status",)
    )
    return w, [Check(cv.ALERT_PROBES_FAILING, {"endpoint": REPO_EP}, start, None, 75 * MINUTE)]


def _probes_monitor_errors(m: Model) -> tuple[World, list[Check]]:
    """A monitor bug (every run a monitor_error for 20 min) pages nobody; it only tickets."""
    w, end = World(STEP, 40 * MINUTE), START + 20 * MINUTE
    crash = cv.REASON_MONITOR_ERROR
    probes(w, m, IA, lambda c, k, n, t: crash if START <= t < end else None, (crash,))
    return w, [
        Check(cv.ALERT_PROBES_FAILING, {"endpoint": IA}, START, None, 40 * MINUTE),
        Check(cv.ALERT_PROBER_ERRORS, {"endpoint": IA}, START, _target("prober-errors"), START + 5 * MINUTE),
    ]


def _prober_errors(m: Model) -> tuple[World, list[Check]]:
    w = World(STEP, 30 * MINUTE)
    crashed = {"n": 0}

    def outcome(klass: str, kind: str, n: int, t: float) -> str | None:
        if t >= START and crashed["n"] == 0 and kind == "chat":
            crashed["n"] = 1
            return cv.REASON_MONITOR_ERROR
        return None

    probes(w, m, IA, outcome, (cv.REASON_MONITOR_ERROR,))
    check = Check(
        cv.ALERT_PROBER_ERRORS, {"endpoint": IA, "kind": "chat"}, START, _target("prober-errors"), 20 * MINUTE
    )
    return w, [check]


def _gauge_case(series: str, alert: str, labels: dict[str, str], before: float, during: float,
                *, key: str | None, blip: bool = False, until: int = 30 * MINUTE) -> Scenario:  # fmt: skip
    """A gauge at ``before`` that turns ``during`` at START (for one sample only when ``blip``)."""

    def scenario(m: Model) -> tuple[World, list[Check]]:
        w = World(STEP, until)
        w.gauge(series, lambda t: during if (t == START if blip else t >= START) else before)
        return w, [Check(alert, labels, START, None if key is None else _target(key), until)]

    return scenario


UP_VLLM = f"up{{{VLLM_LABELS.format(ep=IA)}}}"
UP_MON = f"up{{{MON_LABELS}}}"
SCRAPE_OK = f'{cv.SCRAPE_SUCCESS}{{{MON_LABELS},endpoint="{IA}"}}'
KV = f'{cv.VLLM_KV_USAGE}{{{VLLM_LABELS.format(ep=IA)},model_name="{cv.M3_MODEL_ID}",engine="0"}}'
WAITING = f'{cv.VLLM_WAITING}{{{VLLM_LABELS.format(ep=IA)},model_name="{cv.M3_MODEL_ID}",engine="0"}}'
PREEMPTED = f'{cv.VLLM_PREEMPTIONS}{{{VLLM_LABELS.format(ep=IA)},model_name="{cv.M3_MODEL_ID}",engine="0"}}'
ON_IA = {"endpoint": IA}


def _queue(blip: bool) -> Scenario:
    def scenario(m: Model) -> tuple[World, list[Check]]:
        w = World(STEP, 40 * MINUTE)
        if blip:
            w.gauge(WAITING, lambda t: 50 if t == START else 0)
        else:
            w.gauge(WAITING, lambda t: (t - START) // STEP + 1 if t >= START else 0)
        within = None if blip else _target("queue-growing")
        return w, [Check(cv.ALERT_QUEUE_GROWING, ON_IA, START, within, 40 * MINUTE)]

    return scenario


def _preemptions(blip: bool) -> Scenario:
    def scenario(m: Model) -> tuple[World, list[Check]]:
        w = World(STEP, 40 * MINUTE)
        w.counter(PREEMPTED, [START] if blip else range(START, w.end + 1, 30))
        return w, [
            Check(cv.ALERT_PREEMPTIONS, ON_IA, START, None if blip else _target("preemptions"), 40 * MINUTE)
        ]

    return scenario


def _routing_leak(m: Model) -> tuple[World, list[Check]]:
    """m3-interactive (32K classes) restarted with a 65536 max-model-len: its prompt buckets reach
    50000. 120 short prompts a minute, and from the start one 60000-token prompt a minute (only in
    +Inf). m3-repo serves 60000-token prompts all along: under its 131072 ceiling, never a leak."""
    w = World(STEP, 30 * MINUTE)
    base = f'{VLLM_LABELS.format(ep="{ep}")},model_name="{cv.M3_MODEL_ID}"'
    cases = ((IA, ("20000.0", "50000.0"), 120.0, lambda t: 1.0 if t > START else 0.0),
             (REPO_EP, ("50000.0", "100000.0"), 0.0, lambda t: 60.0))  # fmt: skip
    for ep, edges, short, leak in cases:
        labels = base.replace("{ep}", ep)
        for le in (*edges, "+Inf"):  # 60000 tokens: only in the 100000 and +Inf buckets
            long_in = 1.0 if le == "+Inf" or float(le) >= 60000 else 0.0
            w.rate_counter(f'{cv.VLLM_PROMPT_TOKENS_HIST}_bucket{{{labels},le="{le}"}}',
                           lambda t, s=short, k=long_in, f=leak: s + k * f(t))  # fmt: skip
        w.rate_counter(f"{cv.VLLM_PROMPT_TOKENS_HIST}_count{{{labels}}}", lambda t, s=short, f=leak: s + f(t))
    return w, [
        Check(
            cv.ALERT_ROUTING_LEAK, {**ON_IA, "ceiling": "32768"}, START, _target("routing-leak"), 30 * MINUTE
        ),
        Check(cv.ALERT_ROUTING_LEAK, {"endpoint": REPO_EP}, 0, None, 30 * MINUTE),
    ]


def _block_size(m: Model) -> tuple[World, list[Check]]:
    w = World(STEP, 30 * MINUTE)
    info = f'{cv.VLLM_CACHE_CONFIG_INFO}{{{VLLM_LABELS.format(ep=IA)},engine="0",block_size="{{b}}"}}'
    w.gauge(info.replace("{b}", "128"), lambda t: 1 if t < START else None)
    w.gauge(info.replace("{b}", "16"), lambda t: 1 if t >= START else None)
    return w, [Check(cv.ALERT_BLOCK_SIZE_NOT_128, ON_IA, START, _target("block-size"), 30 * MINUTE)]


def _day_ratio(
    num: str, den: str, before: float, after: float, blip_minutes: int, alert: str, key: str
) -> Scenario:
    """Two endpoints at 1 000 events/min for a day and an hour: on m3-interactive the ratio drops
    from ``before`` to ``after`` at the start and stays; on m3-repo it is 0 for ``blip_minutes``."""

    def scenario(m: Model) -> tuple[World, list[Check]]:
        start = DAY + HOUR
        w = World(MINUTE, start + 90 * MINUTE)
        for ep, fault in (
            (IA, lambda t: t > start),
            (REPO_EP, lambda t: start < t <= start + blip_minutes * MINUTE),
        ):
            labels = f'{VLLM_LABELS.format(ep=ep)},model_name="{cv.M3_MODEL_ID}",engine="0"'
            low = after if ep == IA else 0.0
            w.rate_counter(f"{den}{{{labels}}}", lambda t: 1000.0)
            w.rate_counter(f"{num}{{{labels}}}", _per_minute(1000.0, fault, low, before))
        return w, [
            Check(alert, ON_IA, start, _target(key), start + 80 * MINUTE),
            Check(alert, {"endpoint": REPO_EP}, start, None, start + 90 * MINUTE),
        ]

    return scenario


def _ttft(m: Model) -> tuple[World, list[Check]]:
    """600 requests/min for a week and 40 minutes; TTFT 0.3 s, then 3 s on m3-interactive from the
    start and for 3 minutes only on m3-repo."""
    start = WEEK + 10 * MINUTE
    w = World(MINUTE, start + 40 * MINUTE)
    slow = {IA: lambda t: t > start, REPO_EP: lambda t: start < t <= start + 3 * MINUTE}
    for ep, is_slow in slow.items():
        for le in ("0.5", "1.0", "2.5", "5.0", "+Inf"):
            in_bucket = _per_minute(600.0, is_slow, float(float(le) >= 3.0), float(float(le) >= 0.3))
            name = f'{cv.VLLM_TTFT}_bucket{{{VLLM_LABELS.format(ep=ep)},model_name="{cv.M3_MODEL_ID}",le="{le}"}}'
            w.rate_counter(name, in_bucket)
    return w, [
        Check(cv.ALERT_TTFT_P99_REGRESSION, ON_IA, start, _target("ttft-regression"), start + 20 * MINUTE),
        Check(cv.ALERT_TTFT_P99_REGRESSION, {"endpoint": REPO_EP}, start, None, start + 40 * MINUTE),
    ]


def _per_minute(
    rate: float, fault: Callable[[int], bool], faulty: float, normal: float
) -> Callable[[int], float]:
    """``rate`` × ``faulty`` per minute while ``fault(t)``, else ``rate`` × ``normal``."""
    return lambda t: rate * (faulty if fault(t) else normal)


def _target(key: str) -> int:
    (t,) = [t for t in detection.TARGETS if t.key == key]
    return t.within


PREFIX = _day_ratio(cv.VLLM_PREFIX_HITS, cv.VLLM_PREFIX_QUERIES, 0.8, 0.2, 10,
                    cv.ALERT_PREFIX_HIT_RATE_COLLAPSED, "prefix-collapse")  # fmt: skip
SPEC = _day_ratio(cv.VLLM_SPEC_ACCEPTED, cv.VLLM_SPEC_DRAFT_TOKENS, 0.7, 0.35, 5,
                  cv.ALERT_SPEC_ACCEPTANCE_DROPPED, "spec-drop")  # fmt: skip

#: Target or blip key -> the scenario replaying it (one scenario may carry a target and a blip).
SCENARIOS: dict[str, Scenario] = {
    "endpoint-down": _gauge_case(UP_VLLM, cv.ALERT_ENDPOINT_DOWN, ON_IA, 1, 0, key="endpoint-down"),
    "endpoint-one-scrape": _gauge_case(UP_VLLM, cv.ALERT_ENDPOINT_DOWN, ON_IA, 1, 0, key=None, blip=True),
    "monitor-down": _gauge_case(UP_MON, cv.ALERT_MONITOR_DOWN, {"job": "m3mon"}, 1, 0, key="monitor-down"),
    "monitor-one-scrape": _gauge_case(
        UP_MON, cv.ALERT_MONITOR_DOWN, {"job": "m3mon"}, 1, 0, key=None, blip=True
    ),
    "probes-failing": _probes_failing,
    "probes-failing-sparse": _probes_failing_sparse,
    "probes-failing-restart": _probes_failing_restart,
    "probes-failing-after-maintenance": _probes_failing_after_maintenance,
    "probes-after-outage": _probes_after_outage,
    "probes-maintenance-restart": _probes_maintenance_restart,
    "probes-one-failure": _probes_one_failure,
    "probes-one-round": _probes_one_round,
    "probes-sparse-one-round": _probes_sparse_one_round,
    "probes-monitor-errors": _probes_monitor_errors,
    "prober-errors": _prober_errors,
    "scrape-failing": _gauge_case(SCRAPE_OK, cv.ALERT_SCRAPE_FAILING, ON_IA, 1, 0, key="scrape-failing"),
    "scrape-one-failure": _gauge_case(SCRAPE_OK, cv.ALERT_SCRAPE_FAILING, ON_IA, 1, 0, key=None, blip=True),
    "kv-full": _gauge_case(KV, cv.ALERT_KV_CACHE_NEARLY_FULL, ON_IA, 0.6, 0.95, key="kv-full"),
    "kv-one-sample": _gauge_case(KV, cv.ALERT_KV_CACHE_NEARLY_FULL, ON_IA, 0.6, 0.95, key=None, blip=True),
    "queue-growing": _queue(blip=False),
    "queue-one-sample": _queue(blip=True),
    "preemptions": _preemptions(blip=False),
    "preemption-one": _preemptions(blip=True),
    "prefix-collapse": PREFIX,
    "prefix-10m": PREFIX,
    "spec-drop": SPEC,
    "spec-5m": SPEC,
    "block-size": _block_size,
    "routing-leak": _routing_leak,
    "ttft-regression": _ttft,
    "ttft-3m": _ttft,
}
#: Keys replayed by another key's scenario (the same promtool run carries both checks).
SHARED = {"prefix-10m": "prefix-collapse", "spec-5m": "spec-drop", "ttft-3m": "ttft-regression"}
RUNS = [k for k in SCENARIOS if k not in SHARED]


# --- the tests ------------------------------------------------------------------------------------


def test_every_operational_alert_has_a_target_and_every_promise_a_scenario() -> None:
    from tests.generate.test_detection_self import SCENARIOS as SELF_SCENARIOS  # the monitor's own
    from tests.generate.test_detection_stall import SCENARIOS as STALL_SCENARIOS  # the engine stall
    from tests.generate.test_detection_store import SCENARIOS as STORE_SCENARIOS  # the store's alerts
    from tests.generate.test_detection_tail import SCENARIOS as TAIL_SCENARIOS  # the tail's owner

    assert {t.alert for t in detection.TARGETS} == set(cv.OPERATIONAL_ALERT_NAMES)
    keys = [t.key for t in detection.TARGETS] + [b.key for b in detection.BLIPS]
    assert len(keys) == len(set(keys))
    replayed = set(SCENARIOS) | set(STORE_SCENARIOS) | set(SELF_SCENARIOS) | set(TAIL_SCENARIOS)
    assert set(keys) == replayed | set(STALL_SCENARIOS)
    assert all(b.alert in cv.OPERATIONAL_ALERT_NAMES for b in detection.BLIPS)


def test_docs_list_every_target() -> None:
    text = (REPO / "docs" / "generate.md").read_text()
    section = text[text.index("### Detection-time targets") :]
    for t in detection.TARGETS:
        row = f"| `{t.alert}` | {t.scenario} | {_minutes(t.within)} |"
        assert row in section, row
    for b in detection.BLIPS:
        assert f"| `{b.alert}` | {b.scenario} |" in section, b.key


def _minutes(seconds: int) -> str:
    return f"{seconds / MINUTE:g} min"


def _verify(fired: Fired, world: World, check: Check) -> int | None:
    """Assert ``check`` on what promtool saw; the first fire time (s after the start) or None."""
    times = fire_times(fired, check)
    if check.within is None:
        assert not times, f"{check.alert} fired at {times} s on a one-off event"
        return None
    assert not [t for t in times if t <= check.start], f"{check.alert} fired before the fault: {times}"
    assert check.start + check.within in times, (
        f"{check.alert} not firing {check.within} s after the fault at {check.start} s; fired at {times}"
    )
    return times[0] - check.start


@pytest.mark.parametrize("key", RUNS)
def test_detection(key: str, generated: Path, example: Model, tmp_path: Path) -> None:
    world, checks = SCENARIOS[key](example)
    fired = firing(generated / "alerts" / "operational.rules.yml", world, checks, tmp_path)
    for check in checks:
        _verify(fired, world, check)


def test_detection_test_fails_with_the_old_slow_rule(generated: Path, example: Model, tmp_path: Path) -> None:
    """The probes-failing scenario tells the old timing (for: 10m) from the new one."""
    doc = yaml.safe_load((generated / "alerts" / "operational.rules.yml").read_text())
    (rule,) = [r for g in doc["groups"] for r in g["rules"] if r.get("alert") == cv.ALERT_PROBES_FAILING]
    rule["for"] = "10m"
    slow = tmp_path / "slow.rules.yml"
    slow.write_text(yaml.safe_dump(doc))
    world, checks = _probes_failing(example)
    with pytest.raises(AssertionError, match="not firing 300 s after the fault"):
        _verify(firing(slow, world, checks, tmp_path), world, checks[0])
