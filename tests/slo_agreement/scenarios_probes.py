"""Probe-sourced scenarios. Rounds start 30 s into a minute (kinds 5 s apart) unless stated."""

from __future__ import annotations

from collections.abc import Callable

from tests.slo_agreement.results import ABSENT
from tests.slo_agreement.streams import CRASH, Detection, ProbeRun, Scenario, SLODef, rounds, run

FOUR = ("chat", "tool_call", "image", "reasoning")
WRONG = ("wrong_answer", "malformed_tool_call", "parser_leak", "truncated", "empty_output",
         "degenerate_output", "wrong_model", "missing_usage")  # fmt: skip


def _steady(i: int, kind: str, at: float) -> ProbeRun:
    failures = {(20, "chat"): "timeout", (45, "image"): "http_status", (70, "reasoning"): "connect_error"}
    category = failures.get((i, kind))
    return run(at, kind, category, duration=120.0 if category == "timeout" else 2.0)


def _hang(i: int, kind: str, at: float) -> ProbeRun:
    if 40 <= i <= 55:
        return run(at, kind, "timeout", duration=300.0)  # the server hangs: each probe times out
    return run(at, kind, duration=200.0 if i % 17 == 0 else 2.0)  # some answers take minutes


def _wrong_latency(i: int, kind: str, at: float) -> ProbeRun:
    if 50 <= i < 66 and kind == "tool_call":
        return run(at, kind, "malformed_tool_call", ttft=3.0)  # answered, wrong and slow: a latency event
    if i % 9 == 0:
        return run(at, kind, "timeout", duration=120.0)  # no answer: no latency event
    if i % 13 == 0:
        return run(at, kind, "stream_broken", ttft=4.0)  # a token, then the stream broke: no latency event
    return run(at, kind, ttft=2.5 if i % 7 == 0 else 0.4)  # exactly at the threshold is good


def _crashing(i: int, kind: str, at: float) -> ProbeRun:
    if (20 <= i < 30 and kind == "tool_call") or 40 <= i < 66:
        return run(at, kind, CRASH, duration=0.5)
    return run(at, kind, "http_status" if i == 75 and kind == "chat" else None)


def _quiet(failures: tuple[int, ...]) -> Callable[[int, str, float], ProbeRun]:
    return lambda i, kind, at: run(at, kind, "http_status" if i in failures else None)


def _thirty(i: int, kind: str, at: float) -> ProbeRun:
    if kind == "long_prompt":
        return run(at, kind, "timeout" if i == 5 else None, duration=600.0 if i == 5 else 400.0, ttft=30.0)
    return run(at, kind, duration=3.0)


def _outage(i: int, kind: str, at: float) -> ProbeRun:
    return run(at, kind, "http_status" if 60 <= i < 70 else None)


def _itl(i: int, kind: str, at: float) -> ProbeRun:
    fast = ((0.0625, 1),) * 6 + ((0.25, 4),)  # per-token 0.0625 s
    slow = ((0.5, 2), (0.375, 3), (0.25, 2), (0.125, 1))  # 0.25, 0.125 (= threshold: good), 0.125, 0.125
    if 40 <= i < 60:
        return run(at, kind, "wrong_answer" if i % 2 else None, ttft=0.375, chunks=slow)
    if i % 11 == 0:
        return run(at, kind, "timeout", duration=120.0, ttft=0.375, chunks=slow)
    return run(at, kind, ttft=0.375, chunks=fast)


def _agent(i: int, kind: str, at: float) -> ProbeRun:
    if kind == "tool_call":
        return run(at, kind, "timeout" if i % 10 == 3 else None, duration=120.0 if i % 10 == 3 else 4.0)
    return run(at, kind, "wrong_answer" if i % 8 == 0 else None, duration=90.0 if 40 <= i < 55 else 40.0)


def _queue(i: int, kind: str, at: float) -> ProbeRun:
    queue = None if i % 5 == 0 else (7.5 if 30 <= i < 42 else 0.25)  # None: the server did not report it
    return run(
        at, kind, "timeout" if i % 12 == 0 else None, queue=queue, duration=120.0 if i % 12 == 0 else 9.0
    )


def _correctness(i: int, kind: str, at: float) -> ProbeRun:
    if i % 6 == 1 and kind == "image":
        return run(at, kind, WRONG[(i // 6) % len(WRONG)])
    if i % 10 == 5:
        return run(at, kind, "timeout", duration=120.0)  # unanswered: not a correctness event
    return run(at, kind, CRASH if i % 25 == 7 else None)


def _stops(i: int, kind: str, at: float) -> ProbeRun | None:
    return run(at, kind) if i < 60 else None


def availability(objective: str, **kw: object) -> SLODef:
    return SLODef("availability", "probes", objective, **kw)  # type: ignore[arg-type]


PROBE_SCENARIOS = (
    Scenario("steady-probes", "four kinds every minute for 90 min, three scattered failures",
             availability("99"), 90, rounds(FOUR, 60, 90 * 60, _steady), kinds=FOUR),
    Scenario("slow-probes-timeouts", "probes time out after 300 s for 16 minutes; some answers take 200 s",
             availability("99"), 100, rounds(("chat",), 60, 100 * 60, _hang), probe_timeout=300.0,
             finding="3: events at completion/timeout, not at the probe's start"),
    Scenario("latency-counts-wrong-answers", "TTFT: slow wrong answers count, unanswered runs do not",
             SLODef("ttft", "probes", "95", threshold=2.5), 90,
             rounds(("chat", "tool_call"), 60, 90 * 60, _wrong_latency), kinds=("chat", "tool_call"),
             finding="4: latency counts every answered probe"),
    Scenario("prober-crash", "the tool_call prober raises for 10 minutes, later every prober for 26 (monitor_error)",
             availability("99.9"), 90, rounds(FOUR, 60, 90 * 60, _crashing), kinds=FOUR,
             finding="5: a prober exception is monitor_error, no service event"),
    Scenario("quiet-hour-one-failure", "12 probes an hour; one failure must not page",
             availability("99.9"), 120, rounds(("chat",), 300, 120 * 60, _quiet((16,))),
             probe_interval=300.0, finding="6: minimum-events guard"),
    Scenario("min-events-override", "12 probes an hour, min_events 10: a failure in the first hour "
             "(2 probes) does not page, one at 2 h does", availability("99.9", min_events=10), 140,
             rounds(("chat",), 300, 140 * 60, _quiet((1, 24))), probe_interval=300.0),
    Scenario("one-probe-per-30min", "chat and long_prompt every 30 min (28d, 99 %), one 600 s timeout",
             availability("99", period_days=28), 300,
             rounds(("chat", "long_prompt"), 1800, 300 * 60, _thirty, first=60.0),
             kinds=("chat", "long_prompt"), probe_interval=1800.0, probe_timeout=600.0,
             finding="1: period ratio defined although most 5m windows are empty"),
    Scenario("db-outage-mid-window", "store database away for minutes 50-80; 10 minutes of failures in it",
             availability("99.9"), 120, rounds(FOUR, 60, 120 * 60, _outage), kinds=FOUR, db_outage=(50, 80)),
    Scenario("itl-chunks", "ITL per token from multi-token chunks; slow decode with wrong answers",
             SLODef("itl", "probes", "95", threshold=0.125), 90, rounds(("chat",), 60, 90 * 60, _itl)),
    Scenario("e2e-agent-sessions", "agent sessions of 40 s, then 90 s (e2e 60 s threshold); timeouts",
             SLODef("e2e", "probes", "99", threshold=60.0), 90,
             rounds(("agent_session", "tool_call"), 60, 90 * 60, _agent), kinds=("agent_session", "tool_call")),
    Scenario("queue-time-probes", "server-reported queue time of probes, sometimes missing",
             SLODef("queue_time", "probes", "99.5", threshold=5.0), 90, rounds(("chat",), 60, 90 * 60, _queue)),
    Scenario("correctness-exhausted", "every wrong-answer category in turn until the budget is gone",
             SLODef("correctness", "probes", "99"), 120,
             rounds(("chat", "image", "tool_call"), 60, 120 * 60, _correctness), kinds=("chat", "image", "tool_call")),
    Scenario("probes-stop-absent", "probes stop completing after an hour: SLOMetricAbsent",
             availability("99"), 100, rounds(("chat",), 60, 100 * 60, _stops),
             detection=Detection(ABSENT, 60, 21)),  # no completion for 10 min, then for: 10m (+1 step)
)  # fmt: skip
