"""Replay goodput and probe goodput judge a request the same way (docs/slo-events.md, "goodput").

The class's limits (the tightest threshold per latency SLI): TTFT 1 s (of 2.5 s and 1 s), ITL
50 ms, stall 1 s. Five requests, written by hand, with the verdict the documented definition gives
(a request's ``itl`` is its mean per-token ITL, ``stall`` its longest undivided chunk gap):

=====  ======================================================  ====
 #     timings                                                 good
=====  ======================================================  ====
 1     TTFT 0.3 s, 99 tokens at 10 ms and one at 200 ms:       yes
       mean 11.9 ms (its P99, 200 ms, would break the limit)
 2     TTFT 0.3 s, one 50-token chunk after 1.5 s: ITL samples  no (stall)
       50 × 30 ms (mean 30 ms), longest gap 1.5 s
 3     TTFT 1.2 s, otherwise clean                               no (TTFT)
 4     timed out                                               no
 5     TTFT 0.3 s, 10 ms tokens                                yes
=====  ======================================================  ====

Goodput = 2 / 5 = 0.4, from the replay summary; each request's replay verdict equals the probe
goodput verdict of a probe run with the same timings.
"""

from __future__ import annotations

from pathlib import Path

from monitor.model import load_model
from monitor.probes.result import Gap, ProbeResult, Timings
from monitor.replay.requests import Outcome, Planned
from monitor.replay.summary import request_latency, summarize
from monitor.slo.goodput import is_good, limits
from monitor.slo.probe_goodput import probe_is_good
from tests.probes.conftest import write_config

SLOS = """\
      - {name: ttft-fast, sli: ttft, threshold: 1s, objective: 90, source: probes}
      - {name: itl, sli: itl, threshold: 50ms, objective: 99, source: probes}
      - {name: stall, sli: stall, threshold: 1s, objective: 99, source: probes}
"""


def _gaps(seconds: tuple[float, ...], tokens: int = 1) -> tuple[Gap, ...]:
    return tuple(Gap(0.3 + 0.01 * i, g, tokens, 1 + i * tokens) for i, g in enumerate(seconds))


def _timings(ttft: float, gaps: tuple[Gap, ...], itl: tuple[float, ...]) -> Timings:
    mean = sum(itl) / len(itl)
    return Timings(ttft=ttft, e2e=ttft + sum(g.seconds for g in gaps), itl_mean=mean, itl_p99=max(itl),
                   itl_samples=itl, chunk_gaps=gaps, tpot=mean)  # fmt: skip


REQUESTS: list[tuple[str | None, Timings, bool]] = [
    (None, _timings(0.3, _gaps((0.01,) * 99 + (0.2,)), (0.01,) * 99 + (0.2,)), True),
    (None, _timings(0.3, _gaps((1.5,), tokens=50), (0.03,) * 50), False),
    (None, _timings(1.2, _gaps((0.01,) * 5), (0.01,) * 5), False),
    ("timeout", Timings(), False),
    (None, _timings(0.3, _gaps((0.01,) * 5), (0.01,) * 5), True),
]


def test_replay_and_probe_goodput_agree_with_the_documented_definition(tmp_path: Path) -> None:
    path = write_config(tmp_path / "m.yaml", "http://127.0.0.1:9", kinds="[chat]")
    path.write_text(path.read_text().replace("    slos:\n", "    slos:\n" + SLOS, 1))
    model = load_model(path)
    slos = model.request_class("small").slos
    assert limits(slos) == {"ttft": 1.0, "itl": 0.05, "stall": 1.0}
    outcomes = [Outcome(Planned(i, 0.0, "text", 100, 100), reason, "", t, 100, 100, sent_at=float(i))
                for i, (reason, t, _) in enumerate(REQUESTS)]  # fmt: skip
    for outcome, (reason, timings, good) in zip(outcomes, REQUESTS, strict=True):
        probe = ProbeResult("sim", "small", "chat", 0.0, reason, timings)
        assert is_good(request_latency(outcome), limits(slos)) is good, outcome
        assert probe_is_good(model, probe) is good, probe
    summary = summarize(outcomes, [o.sent_at + 2.0 for o in outcomes], slos)
    assert summary.goodput_ratio == 2 / 5
    assert summary.goodput_limits == {"ttft": 1.0, "itl": 0.05, "stall": 1.0}
