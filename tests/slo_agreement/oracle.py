"""The oracle: a scenario's SLO numbers and alerts, written from docs/slo-events.md alone.

It imports nothing from :mod:`monitor`: every table below is copied from the documentation
(docs/slo-events.md §1–3, categories from docs/probes.md, maintenance windows from the
definition in docs/maintenance.md), and arithmetic is exact
(:class:`fractions.Fraction`) so that "above the threshold" and the minimum-events ceiling are
decided without rounding. Floats come out only at the end.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction

from tests.slo_agreement.results import (
    ABSENT,
    BURN_PAGE,
    BURN_TICKET,
    EXHAUSTED,
    NOT_EDGE,
    Outcome,
    Reading,
    WindowReading,
)
from tests.slo_agreement.streams import CRASH, VLLM_HISTOGRAMS, ProbeRun, Scenario, ServerMinute, SLODef

# --- §1 events ----------------------------------------------------------------------------------
UNANSWERED = frozenset({"connect_error", "timeout", "http_status", "stream_broken", "context_rejected"})
WRONG_ANSWER = frozenset({"empty_output", "truncated", "degenerate_output", "wrong_model", "missing_usage",
                          "malformed_tool_call", "parser_leak", "wrong_answer"})  # fmt: skip
MONITOR_ERROR = "monitor_error"
GOODPUT_LIMITED = frozenset({"ttft", "tpot", "itl", "e2e", "queue_time", "stall"})  # §1 goodput
# --- §2 windows ---------------------------------------------------------------------------------
MINUTE = 60
WINDOWS = (("5m", 300), ("30m", 1800), ("1h", 3600), ("2h", 7200), ("6h", 21600), ("1d", 86400),
           ("3d", 259200))  # fmt: skip
# --- §3 alerts: (alert, long window, short window, budget share) ---------------------------------
BURN_ROWS = (
    (BURN_PAGE, "1h", "5m", Fraction(2, 100)),
    (BURN_PAGE, "6h", "30m", Fraction(5, 100)),
    (BURN_TICKET, "1d", "2h", Fraction(10, 100)),
    (BURN_TICKET, "3d", "6h", Fraction(10, 100)),
)
ABSENT_FOR, NOT_EDGE_FOR = 10, 5  # minutes of the alerts' ``for:``
ABSENT_PROBES_AT_LEAST = 600  # seconds: max(10 min, 2 × probe interval + probe timeout)


@dataclass(frozen=True)
class Event:
    at: float
    valid: int
    bad: int


def category(run: ProbeRun) -> str | None:
    return MONITOR_ERROR if run.category == CRASH else run.category


def itl_gaps(run: ProbeRun) -> list[float]:
    """A chunk of k tokens after a gap g gives k samples of g/k."""
    return [gap / k for gap, k in run.chunks for _ in range(k)]


def longest_gap(run: ProbeRun) -> float | None:
    """The stall value: the longest gap between two token chunks, undivided."""
    return max((gap for gap, _ in run.chunks), default=None)


def mean_itl(run: ProbeRun) -> float | None:
    gaps = itl_gaps(run)
    return sum(gaps) / len(gaps) if gaps else None


def _probe_value(run: ProbeRun, sli: str) -> float | None:
    return {"ttft": run.ttft, "tpot": run.tpot, "e2e": run.duration, "queue_time": run.queue,
            "stall": longest_gap(run), "ttft_cold": run.cold, "ttft_warm": run.warm,
            "itl": mean_itl(run)}[sli]  # fmt: skip


def _probe_values(run: ProbeRun, sli: str) -> list[float]:
    if sli == "itl":
        return itl_gaps(run)
    value = _probe_value(run, sli)
    return [] if value is None else [value]


def goodput_event(run: ProbeRun, limits: Iterable[SLODef]) -> Event | None:
    """§1 goodput: every run but monitor_error; good = succeeded and within every limit it has."""
    cat = category(run)
    if cat == MONITOR_ERROR:
        return None
    tightest: dict[str, float] = {}
    for slo in limits:
        if slo.threshold is not None and slo.sli in GOODPUT_LIMITED:
            tightest[slo.sli] = min(tightest.get(slo.sli, slo.threshold), slo.threshold)
    values = {sli: _probe_value(run, sli) for sli in tightest}
    over = any(v is not None and v > tightest[sli] for sli, v in values.items())
    return Event(run.end, 1, 1 if cat is not None or over else 0)


def probe_event(run: ProbeRun, sli: str, threshold: float | None) -> Event | None:
    """The event of one probe run for one SLI (None: the run is no event of it)."""
    cat = category(run)
    if cat == MONITOR_ERROR:
        return None
    answered = cat not in UNANSWERED
    if sli == "availability":
        return Event(run.end, 1, 0 if answered else 1)
    if not answered:
        return None
    if sli == "correctness":
        return Event(run.end, 1, 1 if cat in WRONG_ANSWER else 0)
    assert threshold is not None
    values = _probe_values(run, sli)
    return Event(run.end, len(values), sum(1 for v in values if v > threshold)) if values else None


def has_edge(edges: Iterable[float], threshold: float) -> bool:
    return any(math.isclose(e, threshold, rel_tol=1e-12) for e in edges)


def pool_edges(scn: Scenario, pool: str) -> tuple[float, ...]:
    p = next(p for p in scn.pools if p.name == pool)
    return p.edges if p.edges is not None else VLLM_HISTOGRAMS.get(scn.slo.sli, ("", ()))[1]


def server_event(scn: Scenario, step: ServerMinute) -> Event | None:
    """A server request is an event at the first scrape after it finished (the step's minute)."""
    slo, at = scn.slo, float(step.minute * MINUTE)
    if slo.sli == "availability":
        reasons = dict(step.finished)
        valid = sum(n for r, n in reasons.items() if r != "abort")
        return Event(at, valid, reasons.get("error", 0))
    assert slo.threshold is not None
    if not has_edge(pool_edges(scn, step.pool), slo.threshold):
        return None  # no edge at the threshold: this pool contributes no events
    valid = sum(n for _, n in step.latencies)
    return Event(at, valid, sum(n for v, n in step.latencies if v > slo.threshold))


def excluded(scn: Scenario, pool: str, at: float) -> bool:
    """Maintenance: an event of the class on the pool's endpoint at instant ``at`` counts for no SLI
    when a window covering that class and endpoint has an occurrence with start < at <= end."""
    return any(
        (not w.pools or pool in w.pools) and w.start * MINUTE < at <= w.end * MINUTE for w in scn.maintenance
    )


def events(scn: Scenario) -> list[Event]:
    """Every counted event, by time; probes run against the first pool's endpoint."""
    slo = scn.slo
    found: list[tuple[str, Event | None]]
    if slo.sli == "goodput":
        found = [(scn.pools[0].name, goodput_event(r, scn.limits)) for r in scn.probes]
    elif slo.source == "probes":
        found = [(scn.pools[0].name, probe_event(r, slo.sli, slo.threshold)) for r in scn.probes]
    else:
        up = {p.name: p for p in scn.pools}
        found = [(s.pool, server_event(scn, s)) for s in scn.server if up[s.pool].up(s.minute)]
    kept = (e for pool, e in found if e is not None and not excluded(scn, pool, e.at))
    return sorted(kept, key=lambda e: e.at)


class Counts:
    """Valid and bad events in (t − w, t], by prefix sums over event times."""

    def __init__(self, evs: list[Event]) -> None:
        self.times = [e.at for e in evs]
        self.valid, self.bad = [0], [0]
        for e in evs:
            self.valid.append(self.valid[-1] + e.valid)
            self.bad.append(self.bad[-1] + e.bad)

    def window(self, t: float, w: float) -> tuple[int, int]:
        hi = bisect.bisect_right(self.times, t)
        lo = bisect.bisect_right(self.times, t - w)
        return self.valid[hi] - self.valid[lo], self.bad[hi] - self.bad[lo]


def objective(scn: Scenario) -> Fraction:
    return Fraction(scn.slo.objective) / 100


def factor(scn: Scenario, long_window: str, share: Fraction) -> Fraction:
    return share * scn.slo.period_days * 86400 / dict(WINDOWS)[long_window]


def min_events(scn: Scenario, f: Fraction) -> int:
    """N = ⌈1 / (f × (1 − o))⌉, at least 1, unless the SLO sets ``min_events``."""
    if scn.slo.min_events is not None:
        return scn.slo.min_events
    return max(1, math.ceil(1 / (f * (1 - objective(scn)))))


def period_name(scn: Scenario) -> str:
    return f"{scn.slo.period_days}d"


def _ratios(scn: Scenario, counts: Counts, t: float) -> dict[str, tuple[int, Fraction | None]]:
    spans = [*WINDOWS, (period_name(scn), scn.slo.period_days * 86400)]
    out: dict[str, tuple[int, Fraction | None]] = {}
    for name, secs in spans:
        valid, bad = counts.window(t, secs)
        out[name] = (valid, Fraction(bad, valid) if valid > 0 else None)
    return out


def _burning(scn: Scenario, ratios: dict[str, tuple[int, Fraction | None]]) -> set[str]:
    budget, firing = 1 - objective(scn), set()
    for alert, long_w, short_w, share in BURN_ROWS:
        f = factor(scn, long_w, share)
        (n_long, r_long), (_, r_short) = ratios[long_w], ratios[short_w]
        if r_long is None or r_short is None:
            continue
        if r_long > f * budget and r_short > f * budget and n_long >= min_events(scn, f):
            firing.add(alert)
    return firing


def _reading(scn: Scenario, ratios: dict[str, tuple[int, Fraction | None]]) -> Reading:
    budget = 1 - objective(scn)
    windows = {
        name: WindowReading(None, None, None)
        if r is None
        else WindowReading(float(r), float(1 - r), float(r / budget))
        for name, (_, r) in ratios.items()
    }
    period = ratios[period_name(scn)][1]
    return Reading(windows, None if period is None else float(1 - period / budget))


def _absent_condition(scn: Scenario) -> Callable[[int], bool]:
    if scn.slo.source == "probes":
        gap = max(ABSENT_PROBES_AT_LEAST, 2 * scn.probe_interval + scn.probe_timeout)
        # A monitor_error run gives no SLI any data, so it is no completed probe here (the doc's
        # "no probe of the class completed" does not say; see the report).
        ends = sorted(r.end for r in scn.probes if category(r) != MONITOR_ERROR)
        done = Counts([Event(t, 1, 0) for t in ends])
        return lambda m: done.window(m * MINUTE, gap)[0] == 0
    return lambda m: not any(p.up(m) for p in scn.pools)


def _not_edge_condition(scn: Scenario) -> Callable[[int], bool]:
    slo = scn.slo
    if slo.source != "server" or slo.threshold is None:
        return lambda m: False
    missing = [p for p in scn.pools if not has_edge(pool_edges(scn, p.name), slo.threshold)]
    return lambda m: any(p.up(m) for p in missing)


def _held_for(condition: Callable[[int], bool], minutes: int, delay: int) -> set[int]:
    """Minutes at which an alert with ``for: delay`` fires: true at every minute of [m − delay, m]."""
    true = [condition(m) for m in range(minutes + 1)]
    return {m for m in range(delay, minutes + 1) if all(true[m - delay : m + 1])}


def evaluate(scn: Scenario) -> Outcome:
    """The oracle's readings at the scenario's check minutes and its firing alerts every minute."""
    counts = Counts(events(scn))
    absent = _held_for(_absent_condition(scn), scn.minutes, ABSENT_FOR)
    not_edge = _held_for(_not_edge_condition(scn), scn.minutes, NOT_EDGE_FOR)
    out = Outcome("oracle")
    for m in range(scn.minutes + 1):
        ratios = _ratios(scn, counts, m * MINUTE)
        reading = _reading(scn, ratios)
        firing = _burning(scn, ratios)
        if reading.budget_remaining is not None and reading.budget_remaining <= 0:
            firing.add(EXHAUSTED)
        firing |= {ABSENT} if m in absent else set()
        firing |= {NOT_EDGE} if m in not_edge else set()
        out.firing[m] = frozenset(firing)
        if m in scn.checks:
            out.readings[m] = reading
    return out
