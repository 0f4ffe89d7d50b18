"""Probe volume against the burn-rate windows: can a class's probes ever fire its alerts?

A probe-sourced SLO gets its events from the class's probe rounds: every ``probe.interval`` each
endpoint serving the class runs every probe kind of the class once. For availability each run is
one event; for correctness and for ``ttft``, ``tpot``, ``e2e`` and ``queue_time`` each answered run
is one event (every run is assumed answered, and every kind assumed to report the timing). ``itl``
yields one event per token gap, many per run, so it is never short of events and is skipped.

For every burn condition of :data:`monitor.conventions.BURN_ALERTS` two things are checked:

* **guard**: the long window must hold at least :func:`monitor.slo.guard.min_events` events. With
  rounds exactly ``interval`` apart, a window of length ``L`` holds ``floor(L/interval)`` or
  ``ceil(L/interval)`` rounds. Fewer than the guard in every window: the condition can never fire;
  in some windows only: it is armed only part of the time. The suggested interval is the longest
  that puts enough rounds in *every* long window: ``L / ceil(guard / events per round)``.
* **short window**: the condition also needs events in its short window (5m, 30m, …). When that
  window holds less than one event on average it is empty most of the time and the condition can
  fire only just after a round.

Start jitter and probe durations move single events by seconds (minutes for long probes); the
arithmetic treats rounds as exactly periodic, so leave a margin below a suggested interval.
Everything here is pure arithmetic on the model; ``m3mon check-config`` formats the findings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from monitor.conventions import BURN_ALERTS, BurnAlert, window_seconds
from monitor.model import SLO, Model
from monitor.slo import burn
from monitor.slo.guard import min_events

#: Probe SLIs with one event per (answered) probe run; ``itl`` has one per token gap.
ONE_EVENT_PER_RUN = frozenset({"availability", "correctness", "ttft", "tpot", "e2e", "queue_time", "stall",
                               "goodput"})  # fmt: skip
#: SLIs with one event per run of the long-prompt probe only.
LONG_PROMPT_ONLY = frozenset({"ttft_cold", "ttft_warm"})
_EPS = 1e-9


@dataclass(frozen=True)
class ProbeVolume:
    """How many events a probe-sourced SLO gets: ``kinds × endpoints`` every ``interval`` seconds."""

    kinds: int
    endpoints: int
    interval: float

    @property
    def per_round(self) -> int:
        return self.kinds * self.endpoints

    @property
    def per_hour(self) -> float:
        return self.per_round * 3600.0 / self.interval

    def rounds_in(self, seconds: float) -> tuple[int, int]:
        """Fewest and most rounds a window of ``seconds`` holds (rounds exactly ``interval`` apart)."""
        ratio = seconds / self.interval
        return math.floor(ratio + _EPS), math.ceil(ratio - _EPS)

    def average_in(self, seconds: float) -> float:
        """Events a window of ``seconds`` holds on average."""
        return self.per_round * seconds / self.interval


@dataclass(frozen=True)
class GuardFinding:
    """The long window of ``alert`` cannot always hold the ``needed`` events its guard asks for."""

    slo: SLO
    alert: BurnAlert
    volume: ProbeVolume
    needed: int  # the guard: min_events(slo, alert)
    fewest: int  # events the long window holds at least
    most: int  # events it holds at most
    suggested_interval: float  # longest interval that fills every long window to the guard
    suggested_rounds: int  # rounds per long window at that interval

    @property
    def never_fires(self) -> bool:
        return self.most < self.needed

    @property
    def single_failure_fires_at_fewest(self) -> bool:
        """Whether ``min_events: fewest`` would let one bad event fire the condition."""
        return self.fewest > 0 and 1.0 / self.fewest > burn.threshold(self.slo, self.alert)


@dataclass(frozen=True)
class ShortWindowFinding:
    """The short window of ``alert`` holds less than one event on average."""

    slo: SLO
    alert: BurnAlert
    volume: ProbeVolume
    average: float  # events in the short window on average
    empty_share: float  # share of the time the short window holds no round
    suggested_interval: float  # puts a round in every short window


Finding = GuardFinding | ShortWindowFinding


def probe_volume(model: Model, slo: SLO) -> ProbeVolume | None:
    """The event volume of a probe-sourced SLO; None when it does not come from whole probe runs."""
    if slo.source != "probes" or slo.sli not in ONE_EVENT_PER_RUN | LONG_PROMPT_ONLY:
        return None
    rc = model.request_class(slo.request_class)
    endpoints = len(model.endpoints_for(rc.name))
    kinds = len(rc.probe.kinds) if slo.sli in ONE_EVENT_PER_RUN else int("long_prompt" in rc.probe.kinds)
    return ProbeVolume(kinds, endpoints, rc.probe.interval) if kinds else None


def guard_finding(slo: SLO, alert: BurnAlert, volume: ProbeVolume) -> GuardFinding | None:
    """A finding when some long window of ``alert`` holds fewer events than its guard."""
    long_s = window_seconds(alert.long_window)
    needed = min_events(slo, alert)
    fewest_rounds, most_rounds = volume.rounds_in(long_s)
    fewest, most = fewest_rounds * volume.per_round, most_rounds * volume.per_round
    if fewest >= needed:
        return None
    rounds = math.ceil(needed / volume.per_round)
    return GuardFinding(slo, alert, volume, needed, fewest, most, long_s / rounds, rounds)


def short_window_finding(slo: SLO, alert: BurnAlert, volume: ProbeVolume) -> ShortWindowFinding | None:
    """A finding when the short window of ``alert`` holds less than one event on average."""
    short_s = window_seconds(alert.short_window)
    average = volume.average_in(short_s)
    if average >= 1.0 - _EPS:
        return None
    empty = max(0.0, 1.0 - short_s / volume.interval)
    return ShortWindowFinding(slo, alert, volume, average, empty, float(short_s))


def slo_findings(model: Model, slo: SLO) -> list[Finding]:
    """Every guard and short-window finding of one SLO, in :data:`BURN_ALERTS` order."""
    volume = probe_volume(model, slo)
    if volume is None:
        return []
    out: list[Finding] = []
    for alert in BURN_ALERTS:
        guard = guard_finding(slo, alert, volume)
        if guard is not None:
            out.append(guard)
        short = short_window_finding(slo, alert, volume)
        if short is not None:
            out.append(short)
    return out


def findings(model: Model) -> list[Finding]:
    """Every finding of every probe-sourced SLO, in configuration order."""
    return [f for slo in model.slos for f in slo_findings(model, slo)]
