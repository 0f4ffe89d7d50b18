"""Scenarios of the LLM-specific probe SLIs: stream stalls, cold and warm TTFT, goodput."""

from __future__ import annotations

from tests.slo_agreement.streams import CRASH, ProbeRun, Scenario, SLODef, rounds, run

#: A healthy stream: per-token 0.05 s, one 3-token chunk (speculative decoding) after 0.15 s.
SMOOTH = ((0.05, 1),) * 8 + ((0.15, 3),)


def _stall(i: int, kind: str, at: float) -> ProbeRun:
    if 30 <= i < 42:  # the stream stops for 3 s mid-answer, then resumes
        return run(at, kind, ttft=0.375, chunks=((0.05, 1),) * 4 + ((3.0, 1),) + ((0.05, 1),) * 4)
    if i % 10 == 3:  # 2.5 s before a 5-token chunk: 0.5 s per token, still a 2.5 s stall
        return run(at, kind, "wrong_answer" if i == 53 else None, ttft=0.375, chunks=((2.5, 5),))
    if i % 10 == 7:
        return run(at, kind, ttft=0.375, chunks=((2.0, 1),))  # exactly at the threshold: good
    if i % 13 == 0:
        return run(at, kind, "timeout", duration=120.0, ttft=0.375, chunks=((9.0, 1),))  # no event
    if i % 17 == 0:
        return run(at, kind, ttft=0.375)  # one chunk only: no gap, no stall event
    return run(at, kind, ttft=0.375, chunks=SMOOTH)


def _cache(i: int, kind: str, at: float) -> ProbeRun:
    if 40 <= i < 60:  # prefix caching stops working: the warm request is as slow as the cold one
        return run(at, kind, duration=20.0, ttft=6.0, cold=6.0, warm=6.0)
    if i % 9 == 0:
        return run(at, kind, "timeout", duration=120.0, ttft=None)
    if i % 11 == 0:
        return run(at, kind, "wrong_answer", duration=20.0, ttft=12.5, cold=12.5, warm=0.5)
    return run(at, kind, duration=20.0, ttft=5.0, cold=5.0, warm=0.25 if i % 2 else 1.0)


def _goodput(i: int, kind: str, at: float) -> ProbeRun:
    pick = i % 8
    if pick == 1:
        return run(at, kind, ttft=1.5, chunks=SMOOTH)  # over the TTFT limit
    if pick == 2:
        return run(at, kind, duration=12.0, chunks=SMOOTH)  # over the e2e limit
    if pick == 3 and 30 <= i < 50:
        return run(at, kind, chunks=((0.05, 1), (2.5, 1)))  # a stall over its limit
    if pick == 4:
        return run(at, kind, "wrong_answer", chunks=SMOOTH)  # answered wrong: never good
    if pick == 5 and i % 3 == 0:
        return run(at, kind, "timeout", duration=120.0, ttft=None)  # unanswered: never good
    if pick == 6 and i % 5 == 0:
        return run(at, kind, CRASH, duration=0.5)  # monitor_error: no event
    if pick == 7:
        return run(at, kind, ttft=1.0, duration=10.0, chunks=((2.0, 4),))  # every value at its limit
    return run(at, kind, chunks=SMOOTH)


LLM_SCENARIOS = (
    Scenario("stall-mid-answer", "a 3 s pause mid-answer in every stream for 12 minutes; multi-token "
             "chunks after long gaps stall too", SLODef("stall", "probes", "95", threshold=2.0), 60,
             rounds(("chat",), 60, 60 * 60, _stall), finding="issue 17: stream stalls"),
    Scenario("ttft-warm-prefix-cache", "prefix caching breaks for 20 minutes: warm TTFT as slow as cold",
             SLODef("ttft_warm", "probes", "99", threshold=1.0), 70,
             rounds(("long_prompt",), 60, 70 * 60, _cache), kinds=("long_prompt",),
             finding="issue 17: cold/warm TTFT"),
    Scenario("ttft-cold", "cold TTFT of the long-prompt probe against 10 s; wrong answers count",
             SLODef("ttft_cold", "probes", "95", threshold=10.0), 45,
             rounds(("long_prompt",), 60, 45 * 60, _cache), kinds=("long_prompt",)),
    Scenario("goodput-every-limit", "goodput against TTFT 1 s, e2e 10 s and stall 2 s at once",
             SLODef("goodput", "probes", "90"), 60, rounds(("chat",), 60, 60 * 60, _goodput),
             limits=(SLODef("ttft", "probes", "95", threshold=1.0),
                     SLODef("e2e", "probes", "99", threshold=10.0),
                     SLODef("stall", "probes", "99", threshold=2.0)),
             finding="issue 17: goodput"),
)  # fmt: skip
