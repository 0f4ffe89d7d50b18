"""A replay's SLO clauses count every unanswered request as a bad event of every latency clause
(docs/contract.md, *SLO clauses of a run*), so a run whose requests mostly failed never holds a
latency SLO on its survivors — for a class with or without an availability SLO.

The oracle is the documented definition written out here: per latency SLI, good = answered
samples at or under the threshold, total = answered samples + unanswered requests; availability
good = answered, total = all. A request answered badly (``truncated``) keeps its timings."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.model import SLO
from monitor.probes.result import Timings
from monitor.replay.clauses import judge
from monitor.replay.requests import Outcome, Planned

TTFT = SLO("small", "ttft-p95", "ttft", 0.95, 86400.0, "probes", threshold=1.0)
E2E = SLO("small", "e2e-p90", "e2e", 0.90, 86400.0, "probes", threshold=2.0)
AVAILABILITY = SLO("small", "availability", "availability", 0.99, 86400.0, "probes")


def _outcome(i: int, reason: str | None, ttft: float) -> Outcome:
    timings = Timings() if reason == "timeout" else Timings(ttft=ttft, e2e=ttft + 0.5)
    return Outcome(Planned(i, 0.0, "text", 100, 10), reason, "", timings, 100, 10, sent_at=float(i))


def test_36_of_40_timed_out_cannot_hold_a_latency_slo() -> None:
    outcomes = [_outcome(i, None, 0.2) for i in range(4)] + [
        _outcome(i, "timeout", 0.0) for i in range(4, 40)
    ]
    (ttft,) = judge(outcomes, [TTFT])  # a class without an availability SLO
    assert (ttft.good, ttft.total, ttft.holds) == (4, 40, False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, "timeout", "truncated"]), st.floats(0.0, 3.0)), max_size=30))
def test_every_unanswered_request_is_one_bad_event_of_each_latency_clause(
    requests: list[tuple[str | None, float]],
) -> None:
    outcomes = [_outcome(i, reason, ttft) for i, (reason, ttft) in enumerate(requests)]
    answered = [(r, t) for r, t in requests if r != "timeout"]
    unanswered = len(requests) - len(answered)
    got = {c.slo: (c.good, c.total) for c in judge(outcomes, [TTFT, E2E, AVAILABILITY])}
    assert got["ttft-p95"] == (sum(1 for _, t in answered if t <= 1.0), len(answered) + unanswered)
    assert got["e2e-p90"] == (sum(1 for _, t in answered if t + 0.5 <= 2.0), len(answered) + unanswered)
    assert got["availability"] == (len(answered), len(requests))
