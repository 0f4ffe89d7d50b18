"""The verdict table: docs/bottleneck.md prints RULES (a test holds them equal), every verdict is
one the scenario matrix reaches, and the pool's queue growth is the documented later-half-minus-
earlier-half (written from docs/bottleneck.md, not from the code)."""

from __future__ import annotations

import re
from pathlib import Path

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.inputs import Inputs, PoolPoint
from monitor.bottleneck.pool import queue_growth
from monitor.bottleneck.rules import RULES, VERDICTS
from monitor.sim.world_scenarios import WORLDS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "bottleneck.md"


def test_the_docs_table_is_the_rules() -> None:
    """docs/bottleneck.md lists every verdict with the evidence it needs, as RULES says."""
    rows = [
        [c.strip().strip("`") for c in line.strip("|").split("|")]
        for line in DOCS.read_text().splitlines()
        if re.match(r"\|\s*`[a-z_]+`\s*\|", line)
    ]
    assert [(r[0], r[1], r[2]) for r in rows] == [(rule.verdict, rule.title, rule.when) for rule in RULES]


def test_every_verdict_has_a_scenario() -> None:
    """Each verdict is the expected one of some world of the scenario matrix (bench/verdict.py)."""
    assert {w.expect[0] for w in WORLDS} == set(VERDICTS)


def test_queue_growth_is_the_later_half_against_the_earlier() -> None:
    """docs/bottleneck.md: the mean requests waiting of the later half of the window's scrape
    intervals (by end) minus the earlier half's; an odd count leaves the middle one out."""
    assert (
        queue_growth([(5.0, 4.0), (1.0, 0.0), (3.0, 9.0), (2.0, 1.0), (4.0, 3.0)])
        == (3 + 4) / 2 - (0 + 1) / 2
    )
    assert queue_growth([(1.0, 6.0), (2.0, 2.0)]) == -4.0  # draining
    assert queue_growth([(1.0, 6.0)]) is None and queue_growth([]) is None


def test_gather_reads_the_recent_windows_waiting_queue() -> None:
    """The recent window (3300, 3600]: its four intervals' waiting 1, 1, 3, 5 grow by
    (3+5)/2 - (1+1)/2 = 3; the interval before the window (waiting 40) and one without a waiting
    gauge are not read; per endpoint, then summed."""
    ends = [(3240, 40.0), (3360, 1.0), (3420, 1.0), (3450, None), (3500, 3.0), (3600, 5.0)]
    pool = tuple(PoolPoint("ep", end, waiting=w) for end, w in ends)
    e = gather(Inputs("chat", 3600.0, pool=pool))
    assert e.pool.waiting_growth == 3.0 and e.to_json()["queue_growth"] == 3.0
    other = tuple(PoolPoint("ep2", end, waiting=2 * w) for end, w in ends if w is not None)
    assert gather(Inputs("chat", 3600.0, pool=pool + other)).pool.waiting_growth == 3.0 + 6.0
    assert gather(Inputs("chat", 3600.0, pool=pool[:2])).pool.waiting_growth is None
