"""The oracle of an unaligned world: what each engine may count, written from the documentation alone.

It imports nothing from :mod:`monitor`. docs/slo-events.md and docs/maintenance.md say: an event
happens at its true instant τ (a probe's completion, a request's finish; a real-traffic request's
span's arrival at the monitor, which counts it then); an engine sees it at the first look after
it — the store at the next stored reading of the pool (probes and spans: at τ exactly), the
rules at the first evaluation after the next Prometheus sample — and never before; events of an
occurrence ``(start, end]`` count nowhere, and an engine excludes the whole span it saw an event
in when that span overlaps an occurrence. So for an engine that places every event at most Δ after
it happened, the count of a window ``(t − w, t]`` lies in

* **at most** the events with τ in ``(t − w − Δ, t]`` outside maintenance (nothing is invented,
  nothing counted twice, nothing of maintenance kept); and
* **at least** the events with τ in ``(t − w, t − Δ]`` outside maintenance that are more than Δ from
  any boundary of an occurrence covering their pool and more than Δ before a restart of whoever
  counts them (a restart loses what its last read had not seen).

Δ is the *stated tolerance*, from the world's schedule only: the store's server Δ is the longest
gap between the pair's good readings of a pool (its probe and traffic Δ is 0: results and spans'
slices carry their instant);
the rules' Δ is the longest gap between Prometheus' good scrapes of the target, plus one minute
per evaluation up to and including the next that ran. Three properties have no tolerance: with no
bad event outside maintenance, nothing alerts; the store never holds more events than happened;
and no window of either engine holds more bad events than valid ones (judged in
:mod:`tests.slo_agreement.unaligned.sweep`).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass

from tests.slo_agreement.unaligned.world import MINUTES, REPLICAS, World

WINDOW_SECONDS = {"5m": 300, "30m": 1800, "1h": 3600, "2h": 7200, "6h": 21600, "1d": 86400, "3d": 259200,
                  "30d": 2592000}  # fmt: skip
ALERTS = ("SLOErrorBudgetBurnPage", "SLOErrorBudgetBurnTicket", "SLOErrorBudgetExhausted")


@dataclass(frozen=True)
class Event:
    at: float
    bad: bool
    pool: str
    observer: str  # whose restart loses it: the pool (server) or the probing replica


def events(world: World) -> list[Event]:
    if world.source == "server":
        evs = [Event(t, bad, p, p) for p in world.pools for t, bad in world.requests[p]]
    else:  # probe runs at their completion; real traffic at its spans' arrival (the receiver counts it)
        evs = [Event(r.end, r.bad, r.pool or world.pools[0], r.replica) for r in world.runs]
    return sorted(evs, key=lambda e: e.at)


def _skips(world: World) -> int:
    """The longest run of consecutive skipped evaluations."""
    runs = [len(list(g)) for k, g in itertools.groupby(range(MINUTES + 1), lambda m: m in world.skipped) if k]
    return max(runs, default=0)


def delta_store(world: World, pool: str) -> float:
    if world.source != "server":
        return 0.0  # probe results and traffic slices carry their own instant
    good = sorted(t for r in REPLICAS for t in world.monitors[(r, pool)].good())
    return max(b - a for a, b in itertools.pairwise(good)) + 0.1


def delta_rules(world: World, pool: str) -> float:
    targets = [pool] if world.source == "server" else [f"monitor-{r}" for r in REPLICAS]
    gap = max(world.prometheus[t].max_gap() for t in targets)
    return gap + 60.0 * (1 + _skips(world)) + 2.0


class Oracle:
    """Lower and upper counts per engine, window and instant."""

    def __init__(self, world: World, engine: str) -> None:
        self.world = world
        self.delta = {p: (delta_store if engine == "store" else delta_rules)(world, p) for p in world.pools}
        restarts = world.restarts if world.source == "server" else world.monitor_restarts
        self.counted, self.sure = [], []
        for e in events(world):
            if world.in_maintenance(e.pool, e.at):
                continue
            self.counted.append(e)
            d = self.delta[e.pool]
            near = any(abs(e.at - b) <= d for b in world.boundaries(e.pool))
            # the rules lose a restarted counter's last unseen rise; the store keeps probe results and spans
            lost = any(r - d <= e.at <= r for r in restarts.get(e.observer, ())) and not (
                engine == "store" and world.source != "server")  # fmt: skip
            if not near and not lost:
                self.sure.append(e)
        self.widest = max(self.delta.values())

    @staticmethod
    def _count(evs: list[Event], lo: float, hi: float) -> tuple[int, int]:
        times = [e.at for e in evs]
        a, b = bisect.bisect_right(times, lo), bisect.bisect_right(times, hi)
        return b - a, sum(e.bad for e in evs[a:b])

    def bounds(self, t: float, window: str) -> tuple[tuple[int, int], tuple[int, int]]:
        """((valid, bad) at least, (valid, bad) at most) for window ``(t − w, t]``."""
        w, d = WINDOW_SECONDS[window], self.widest
        return self._count(self.sure, t - w, t - d), self._count(self.counted, t - w - d, t)

    def nominal(self, t: float, window: str) -> tuple[int, int]:
        return self._count(self.counted, t - WINDOW_SECONDS[window], t)

    def clean(self) -> bool:
        """No bad event outside maintenance: nothing may alert."""
        return not any(e.bad for e in self.counted)

    def happened(self) -> int:
        return len(self.counted)
