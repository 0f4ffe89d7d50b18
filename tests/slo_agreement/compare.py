"""Where two evaluators disagree about a scenario, as readable lines (empty: they agree).

Numbers are compared at the check minutes with the tolerance of :mod:`tests.slo_agreement.results`.
Alerts are compared at every minute: a difference is tolerated only when the other side shows
the same state one evaluation step earlier or later, so firing episodes may shift by ±1 minute.
"""

from __future__ import annotations

from tests.slo_agreement.results import Outcome, Reading, close, expected_status
from tests.slo_agreement.streams import Scenario

MAX_LINES = 12


def _fmt(v: float | None) -> str:
    return "none" if v is None else f"{v:.12g}"


def _reading_lines(m: int, ref: Reading, other: Reading, who: str) -> list[str]:
    out = []
    for name, want in ref.windows.items():
        got = other.windows.get(name)
        if got is None:
            out.append(f"min {m} {name}: {who} has no such window")
            continue
        for field, scale in (("ratio", False), ("attainment", False), ("burn", True)):
            a, b = getattr(want, field), getattr(got, field)
            if not close(a, b, scale):
                out.append(f"min {m} {name} {field}: oracle {_fmt(a)}, {who} {_fmt(b)}")
    if not close(ref.budget_remaining, other.budget_remaining, scale=True):
        out.append(f"min {m} budget remaining: oracle {_fmt(ref.budget_remaining)}, {who} "
                   f"{_fmt(other.budget_remaining)}")  # fmt: skip
    return out


def numbers(ref: Outcome, other: Outcome) -> list[str]:
    out: list[str] = []
    for m, want in sorted(ref.readings.items()):
        got = other.readings.get(m)
        if got is None:
            out.append(f"min {m}: {other.source} has no evaluation")
        else:
            out += _reading_lines(m, want, got, other.source)
    return out


def _state(o: Outcome, alert: str, m: int) -> bool | None:
    firing = o.firing.get(m)
    return None if firing is None else alert in firing


def alerts(ref: Outcome, other: Outcome) -> list[str]:
    out: list[str] = []
    for alert in other.alerts:
        wrong = [m for m in sorted(ref.firing) if _state(other, alert, m) is not None
                 and _state(ref, alert, m) != _state(other, alert, m)
                 and _state(ref, alert, m) not in (_state(other, alert, m - 1), _state(other, alert, m + 1))]  # fmt: skip
        a, b = ref.first_fire(alert), other.first_fire(alert)
        if (a is None) != (b is None) or (a is not None and b is not None and abs(a - b) > 1):
            out.append(f"{alert} first fires: oracle {a}, {other.source} {b}")
        if wrong:
            out.append(f"{alert} differs (beyond ±1 min) at minutes {_spans(wrong)}: oracle "
                       f"{'firing' if _state(ref, alert, wrong[0]) else 'quiet'} at {wrong[0]}")  # fmt: skip
    return out


def statuses(ref: Outcome, other: Outcome) -> list[str]:
    """The stored status at check minutes against the one the oracle's numbers imply (±1 minute)."""
    out = []
    for m, reading in sorted(ref.readings.items()):
        if m not in other.status:
            continue
        want = expected_status(reading, ref.firing[m])
        near = {other.status.get(n) for n in (m - 1, m, m + 1)}
        if want not in near:
            out.append(f"min {m} status: oracle implies {want!r}, {other.source} stored {other.status[m]!r}")
    return out


def _spans(minutes: list[int]) -> str:
    spans: list[list[int]] = []
    for m in minutes:
        if spans and m == spans[-1][1] + 1:
            spans[-1][1] = m
        else:
            spans.append([m, m])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:6]) + (
        " ..." if len(spans) > 6 else ""
    )


def detection(scn: Scenario, outcomes: list[Outcome]) -> list[str]:
    """docs/slo-events.md §3: the alert fires by onset + target, and the ``never`` alerts never fire."""
    d = scn.detection
    if d is None:
        return []
    out = []
    for o in (o for o in outcomes if d.alert in o.alerts):  # the store has no absent/not-edge alert
        first = o.first_fire(d.alert)
        if first is None or first - d.onset > d.within:
            out.append(f"{o.source}: {d.alert} first fires at {first}, target {d.onset} + {d.within} min")
        out += [f"{o.source}: {a} fires at {o.first_fire(a)} (must never)" for a in d.never
                if o.first_fire(a) is not None]  # fmt: skip
    return out


def hand_computed(scn: Scenario, outcomes: list[Outcome]) -> list[str]:
    """The scenario's hand-computed ratios and first firing minutes, exactly, in every source."""
    if scn.expected is None:
        return []
    out = []
    for o in outcomes:
        for m, window, want in scn.expected.ratios:
            reading = o.readings.get(m)
            got = reading.windows.get(window) if reading is not None else None
            if got is None or not close(want, got.ratio):
                out.append(f"{o.source}: min {m} {window} ratio {_fmt(got.ratio if got else None)}, "
                           f"by hand {_fmt(want)}")  # fmt: skip
        for alert, first in scn.expected.first_fires:
            if alert in o.alerts and o.first_fire(alert) != first:
                out.append(f"{o.source}: {alert} first fires at {o.first_fire(alert)}, by hand {first}")
    return out


def disagreements(scn: Scenario, oracle: Outcome, others: list[Outcome]) -> list[str]:
    """Every disagreement with the oracle (and missed detection target or hand-computed number),
    at most MAX_LINES per kind."""
    lines: list[str] = []
    for other in others:
        checks = (("numbers", numbers(oracle, other)), ("alerts", alerts(oracle, other)),
                  ("status", statuses(oracle, other)))  # fmt: skip
        for kind, found in checks:
            lines += [f"[{other.source} {kind}] {line}" for line in found[:MAX_LINES]]
            if len(found) > MAX_LINES:
                lines.append(f"[{other.source} {kind}] ... and {len(found) - MAX_LINES} more")
    lines += [f"[detection] {line}" for line in detection(scn, [oracle, *others])]
    return lines + [f"[by hand] {line}" for line in hand_computed(scn, [oracle, *others])]
