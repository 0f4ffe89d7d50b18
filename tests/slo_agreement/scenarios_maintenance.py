"""Maintenance scenarios: events inside a window count for no SLI, in rules, store and oracle alike.

The definition (docs/maintenance.md): an occurrence covers the instants ``(start, end]``; an
event of class C on endpoint E at instant t is excluded when a window covering (C, E) has an
occurrence with start < t <= end. Probe events happen at the run's completion, server events at
the scrape that first sees them. Each scenario states numbers computed by hand below (checked
exactly in every source, the oracle included); had maintenance been ignored they would differ.
"""

from __future__ import annotations

import dataclasses

from tests.slo_agreement.results import BURN_PAGE, BURN_TICKET, EXHAUSTED
from tests.slo_agreement.streams import (
    Expected,
    Pool,
    ProbeRun,
    Scenario,
    ServerMinute,
    SLODef,
    Window,
    requests,
    rounds,
    run,
    traffic,
)

NEVER = ((BURN_PAGE, None), (BURN_TICKET, None), (EXHAUSTED, None))


def _inside(i: int, kind: str, at: float) -> ProbeRun:
    """Rounds complete at 60·i + 32 s: rounds 20..29 complete in (20 min, 30 min] and fail."""
    return run(at, kind, "http_status" if 20 <= i <= 29 else None)


# (a) Window (20, 30] over the class; probe availability 95 %, one chat run a minute.
# Rounds 20..29 fail inside it. Boundary runs: a failure completing at exactly 20:00 (start: counted),
# one completing at exactly 30:00 (end: excluded), a success at 30:00.5 (after: counted).
# At minute 45: 45 rounds − 10 excluded + 2 counted boundary runs = 37 valid, 1 bad → 1/37
# (ignoring maintenance: 12/47). 5m at 20: rounds 15..19 + the 20:00 failure → 1/6; at 25 and 30
# every event of (t − 5m, t] is excluded → no data; at 35: rounds 30..34 + the 30:00.5 run → 0.
# The worst ratio is 1/21 (minutes 20..30, every window), under every burn threshold
# (0.72, 0.3, 0.15, 0.05) and under the budget 0.05: nothing fires (ignoring maintenance, all would).
PROBES_BOUNDARIES = Scenario(
    "maint-probe-boundaries", "probe failures only inside a class window (20, 30], failures exactly at its start and end",
    SLODef("availability", "probes", "95"), 45,
    (*rounds(("chat",), 60, 45 * 60, _inside), run(1199.0, category="http_status", duration=1.0),
     run(1790.0, category="http_status", duration=10.0), run(1800.0, duration=0.5)),
    maintenance=(Window("upgrade", 20, 30),),
    expected=Expected(((20, "5m", 1 / 6), (25, "5m", None), (30, "5m", None), (35, "5m", 0.0),
                       (45, "30d", 1 / 37), (45, "1h", 1 / 37)), NEVER),
)  # fmt: skip


def _pool_b(down: tuple[int, int] | None) -> tuple[ServerMinute, ...]:
    """Pool b: 100 requests a minute; 5 errors at minute 20 (the window's start: counted), 30 a
    minute in 21..40 (excluded), 1 at minute 41 (counted). It restarts for the upgrade at 30, or
    is down in the minutes ``[down)`` (no request finishes, scrapes fail) and restarts after."""
    errors = {20: 5, 41: 1} | dict.fromkeys(range(21, 41), 30)
    restart = 30 if down is None else down[1]
    return tuple(
        ServerMinute(m, "b", tuple(requests(100 - errors.get(m, 0), error=errors.get(m, 0)).items()),
                     restart=m == restart, lost=20 if m == restart else 0)
        for m in range(1, 61) if down is None or not down[0] <= m < down[1]
    )  # fmt: skip


# (b) Server availability 99 %, pools a and b at 100 requests a minute each; a window (20, 40] on
# pool b's endpoint only. Pool a has 2 errors a minute in 21..40, all counted.
# 5m at 20 (minutes 16..20): 1000 valid, b's 5 errors → 0.005. 5m at 40 (36..40): only pool a,
# 500 valid, 10 bad → 0.02 (ignoring maintenance: 160/1000). 5m at 45 (41..45): 1/1000.
# 30d at 60: a 6000 valid 40 bad, b 40 minutes × 100 = 4000 valid 6 bad → 46/10000. The worst
# 6h ratio is 45/6000 = 0.0075 at minute 40, under the lowest burn threshold and the budget
# (0.01): nothing fires (ignoring maintenance, b's 600 errors would page).
# The same with b down in minutes 31..33 (restarted at 34): the same numbers (b's minutes inside
# the window count nowhere) and 5m at 35 = pool a's 10/500 = 0.02.
def _one_pool(name: str, about: str, down: tuple[int, int] | None = None) -> Scenario:
    return Scenario(
        name, about, SLODef("availability", "server", "99"), 60, pools=(Pool("a"), Pool("b", down=down)),
        server=traffic("a", range(1, 61), lambda m: requests(98, error=2) if 21 <= m <= 40 else requests(100))
        + _pool_b(down),
        maintenance=(Window("b-upgrade", 20, 40, pools=("b",)),),
        expected=Expected(((20, "5m", 0.005), (35, "5m", 0.02), (40, "5m", 0.02), (45, "5m", 0.001),
                           (60, "30d", 0.0046)), NEVER),
    )  # fmt: skip


ONE_POOL = _one_pool(
    "maint-one-pool", "two pools, a window (20, 40] on pool b only; b fails and restarts inside it"
)
# The scrape gap's events reach Prometheus at minute 34, inside the window: the rules' step record
# takes b's rise since its last sample a step old (minute 30), so they are subtracted like the store
# excludes the interval (30, 34].
POOL_DOWN = _one_pool("maint-pool-down", "as maint-one-pool, with b down in minutes 31..33 (its scrapes fail)",
                      down=(31, 34))  # fmt: skip


# (c) Server availability 99.9 %, 1000 requests a minute; a class window (20, 30]; from minute 26
# on, 5 % errors (50 a minute) that outlast the window. Only minutes 1..20 and 31.. count, so at
# minute 30 + k (k <= 20) the 1h, 6h, 1d, 3d and 30d windows hold 20000 + 1000k valid and 50k bad
# events, the 30m window 20000 valid (minutes k+1..20 and 31..30+k) and 50k bad, the 5m 5 %.
# Page rows: 6h/30m needs 50k / (20000 + 1000k) > 6 × 0.001 → 44k > 120 → k = 3 (150/23000 =
# 0.00652; 30m 150/20000 = 0.0075); 1h/5m needs 35.6k > 288 → k = 9. So the page fires at minute
# 33 (ignoring maintenance: onset 26, 25 clean minutes, 44k > 150 → k = 4, minute 29).
# Tickets: 3d/6h (factor 1) at k = 1 (50/21000 = 0.00238 > 0.001, 21000 >= 1000) → minute 31;
# the budget (0.001) is exhausted at minute 31 too. 5m at 25 and 30: no data; at 35: 0.05;
# 1h at 35: 250/25000 = 0.01.
OUTAGE_OUTLASTS = Scenario(
    "maint-outage-outlasts", "5 % errors from minute 26, inside a class window (20, 30], continuing after it",
    SLODef("availability", "server", "99.9"), 40,
    server=traffic("a", range(1, 41), lambda m: requests(950, error=50) if m >= 26 else requests(1000)),
    maintenance=(Window("deploy", 20, 30),),
    expected=Expected(((25, "5m", None), (30, "5m", None), (35, "5m", 0.05), (35, "1h", 0.01)),
                      ((BURN_PAGE, 33), (BURN_TICKET, 31), (EXHAUSTED, 31))),
    finding="issue 16: the page counts only the events after the window",
)  # fmt: skip

# (d) As (c), with Prometheus unable to scrape the monitor in minutes 27..28 (a scrape timeout,
# a restart): the maintenance gauges go stale for two rule evaluations inside the window while
# the errors run. The store is unaffected, so every number is (c)'s. The old rules read the
# gauges as instant values: those two steps saw no maintenance and counted 100 errors, and the
# ticket and exhaustion came at minute 27, inside the window (issue 41).
MONITOR_UNSCRAPED = dataclasses.replace(
    OUTAGE_OUTLASTS, name="maint-monitor-unscraped",
    about="as maint-outage-outlasts, the monitor unscraped in minutes 27..28 (inside the window)",
    monitor_down=(27, 29), finding="issue 41: a failed scrape of the monitor does not end a maintenance",
)  # fmt: skip

MAINTENANCE_SCENARIOS = (PROBES_BOUNDARIES, ONE_POOL, POOL_DOWN, OUTAGE_OUTLASTS, MONITOR_UNSCRAPED)
