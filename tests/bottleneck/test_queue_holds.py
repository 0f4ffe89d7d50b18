"""A queue the server's ``num_requests_waiting`` gauge saw grow is evidence for the recent window
(5 minutes), as the probes' and the histograms' queue times are: a burst that queued and drained
two minutes ago still names the queue, and one that drained more than the recent window ago does
not. Before, the gauge was read only while the queue still grew, so load in bursts near capacity
flipped the verdict to ``none`` between a burst's queue and the probes that show it a few minutes
later (docs/bottleneck.md "A queue that recurs holds").

The oracle is the documented rule: the queue grew by 1 or more over the recent window ending at
some scrape of the recent window, with 2 or more waiting over that window's last quarter.
"""

from __future__ import annotations

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.inputs import RECENT, Inputs, Objectives, PoolPoint
from monitor.bottleneck.rules import decide

STEP = 15.0
BURST = (3.0, 5.0, 4.0)  # requests waiting at three scrapes, then none


def _points(burst_end: float, end: float) -> tuple[PoolPoint, ...]:
    out, t = [], end - 2 * RECENT
    while t <= end:
        k = round((burst_end - t) / STEP)
        waiting = BURST[len(BURST) - 1 - k] if 0 <= k < len(BURST) else 0.0
        out.append(PoolPoint("ep", t, requests=45.0, waiting=waiting, running=40.0))
        t += STEP
    return tuple(out)


def _queue_named(since_burst: float) -> list[str]:
    burst_end = 100_000.0
    end = burst_end + since_burst
    v = decide(gather(Inputs("chat", end, objectives=Objectives(2.5, 40.0), pool=_points(burst_end, end))))
    return [c.verdict for c in v.causes if c.stage == "queue"]


def test_a_burst_that_queued_holds_for_the_recent_window_then_clears() -> None:
    assert _queue_named(0.0) == ["queue_bound"]  # growing now: named before and after the change
    for since in (STEP, 60.0, 120.0, 240.0):
        assert _queue_named(since) == ["queue_bound"], since
    for since in (RECENT + 2 * STEP, RECENT + 120.0):
        assert _queue_named(since) == [], since


def test_a_steady_queue_is_not_growth() -> None:
    """Two waiting at every scrape for ten minutes: no growth anywhere, no cause."""
    end = 100_000.0
    points = tuple(
        PoolPoint("ep", end - STEP * k, requests=45.0, waiting=2.0, running=40.0) for k in range(41)
    )
    v = decide(gather(Inputs("chat", end, objectives=Objectives(2.5, 40.0), pool=points)))
    assert [c for c in v.causes if c.stage == "queue"] == []
