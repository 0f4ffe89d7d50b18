"""The history's diurnal load, as docs/history.md states it: users arrive at ``peak_rate × load(t)``
with load 0.2 at 03:00 UTC, 1.0 at 15:00 UTC, times 0.55 at weekends. Counted on what the generator
hands the store: the requests the pool finished in hour-long scrape intervals centred on those
hours (Poisson draws of thousands of requests: the ratios hold to within a few per cent)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from monitor.history import server
from monitor.history.pool import make_pool, state
from monitor.history.scenario import scenario

HOUR = 3600.0
FRIDAY = datetime(2026, 11, 27, tzinfo=UTC).timestamp()
SATURDAY = FRIDAY + 24 * HOUR


def test_the_interactive_pools_users_follow_the_day_and_the_week() -> None:
    scn = scenario(SATURDAY + 24 * HOUR, 3.0)  # Thursday to Sunday 00:00 UTC
    pool = make_pool("m3-interactive", 32768, scn)
    at = {"fri 03:00": FRIDAY + 3 * HOUR, "fri 15:00": FRIDAY + 15 * HOUR, "sat 15:00": SATURDAY + 15 * HOUR}
    ends = [t + HOUR / 2 for t in at.values()]  # each interval is (t - 30 min, t + 30 min]
    got = server.intervals(pool, "m3", ends, HOUR, lambda t: state(pool, scn, t), np.random.default_rng(7))
    finished = dict(zip(at, (s.total.finished["stop"] for s in got), strict=True))
    assert finished["fri 03:00"] > 1000  # enough users at night for the ratios to mean something
    assert finished["fri 15:00"] / finished["fri 03:00"] == pytest.approx(1.0 / 0.2, rel=0.08)
    assert finished["sat 15:00"] / finished["fri 15:00"] == pytest.approx(0.55, rel=0.05)
