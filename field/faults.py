"""The live run's faults, as data, and how its timeline is judged (``field/live_run.py``).

Each fault starts ``start`` minutes after the healthy baseline (plus ``phase`` seconds, so onsets
are off the engines' evaluation grid) and is cleared at ``end`` minutes (minus ``phase``). Its
expectations are alerts that must fire, with a target counted from the onset: the operational
targets of ``monitor/generate/detection.py`` and the SLO pages' first fire from the burn rows
(``monitor/slo/burn.py``, as ``m3mon check-config`` prints them, windows full of healthy traffic),
each plus one scrape interval and one probe interval (the first failed probe and its scrape;
docs/generate.md). Any alert that starts firing in either engine without a fault that explains it
— on the fault's endpoints or classes, from the onset to :data:`GRACE` after the fault ends, and
not among the fault's forbidden alerts — is a false alert.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from monitor import conventions as cv
from monitor.generate.detection import TARGETS
from monitor.model import load_model
from monitor.slo import burn

if TYPE_CHECKING:
    from field.stack import Processes

from pathlib import Path

EXAMPLE = load_model(Path(__file__).resolve().parents[1] / "examples" / "monitor.yaml")
SCRAPE = 15  # the example's scrape interval of the probed pools, seconds
#: After a fault ends, alerts it explains may still start for this long (a probe's timeout, the
#: last bad probe's scrape and a rule step).
GRACE = 180
#: Group intervals: the SLO groups pin 1m, every other group runs at the global 15 s.
SLO_INTERVAL, OTHER_INTERVAL = 60, 15
#: Alertmanager's group_wait for pages and tickets (alerts/alertmanager.yml) and one evaluation.
DELIVERY = 30 + OTHER_INTERVAL


@dataclass(frozen=True)
class Expect:
    alert: str
    labels: dict[str, str]
    target: int  # seconds from the onset (from the window's start for a maintenance fault)
    why: str
    routed: bool = True  # False: routed to the monitor's own receiver only (info), not captured


@dataclass(frozen=True)
class Fault:
    name: str
    describe: str
    start: float  # minutes after the baseline
    end: float
    inject: Callable[[Processes], None]
    clear: Callable[[Processes], None]
    endpoints: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    expect: tuple[Expect, ...] = ()
    forbidden: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None  # None: any alert of its endpoints and classes may fire
    phase: float = 20.0
    maintenance: bool = False
    restart_monitor: float | None = None  # minutes after the baseline
    extra: dict[str, Any] = field(default_factory=dict)


def _operational(key: str) -> int:
    return next(t.within for t in TARGETS if t.key == key) + SCRAPE


def _page(klass: str, slo: str, error_rate: float) -> Expect:
    model_slo = next(s for c in EXAMPLE.classes if c.name == klass for s in c.slos if s.name == slo)
    probe = next(c.probe.interval for c in EXAMPLE.classes if c.name == klass)
    found = burn.detection(model_slo, "page", error_rate)
    assert found is not None, (klass, slo, error_rate)
    minutes, row = found
    why = f"{minutes} min ({row.long_window}/{row.short_window}) + probe {probe:.0f} s + scrape {SCRAPE} s"
    labels = {cv.L_CLASS: klass, "slo": slo}
    return Expect(cv.ALERT_BURN_PAGE, labels, int(minutes * 60 + probe + SCRAPE), why)


def _kill(name: str) -> Callable[[Processes], None]:
    return lambda p: p.kill_sim(name)


def _start(name: str) -> Callable[[Processes], None]:
    return lambda p: p.start_sim(name)


def _set(name: str, **faults: Any) -> Callable[[Processes], None]:
    return lambda p: p.sims[name].faults(**faults)


def _clear(name: str) -> Callable[[Processes], None]:
    return lambda p: p.sims[name].clear()


INTERACTIVE = ("interactive-32k", "multimodal", "agent")
NEVER_AFTER_RECOVERY = (cv.ALERT_PROBES_FAILING, cv.ALERT_MONITOR_DOWN)
FAULTS: tuple[Fault, ...] = (
    Fault(
        "outage-interactive",
        "m3-interactive killed (connections refused, /health down) for 6 min",
        0,
        6,
        _kill("m3-interactive"),
        _start("m3-interactive"),
        ("m3-interactive",),
        INTERACTIVE,
        (
            Expect(
                cv.ALERT_ENDPOINT_DOWN,
                {"endpoint": "m3-interactive"},
                _operational("endpoint-down"),
                "detection.py endpoint-down + scrape",
            ),
            _page("interactive-32k", "availability", 1.0),
            _page("multimodal", "availability", 1.0),
            _page("agent", "availability", 1.0),
        ),
        forbidden=NEVER_AFTER_RECOVERY,
    ),
    Fault(
        "outage-repo",
        "m3-repo killed 1 min later (a second endpoint's page, its own group)",
        1,
        6,
        _kill("m3-repo"),
        _start("m3-repo"),
        ("m3-repo",),
        ("repo-analysis-128k",),
        (
            Expect(
                cv.ALERT_ENDPOINT_DOWN,
                {"endpoint": "m3-repo"},
                _operational("endpoint-down"),
                "detection.py endpoint-down + scrape",
            ),
        ),
        forbidden=NEVER_AFTER_RECOVERY,
    ),
    Fault(
        "maintenance-errors",
        "every m3-interactive completion fails (/health ok) inside a 5-min "
        "maintenance; the monitor restarts (30 s away) a minute after it ends",
        9,
        14,
        _set("m3-interactive", health_ok_completions_fail=True),
        _clear("m3-interactive"),
        ("m3-interactive",),
        INTERACTIVE,
        (
            Expect(
                cv.ALERT_MAINTENANCE,
                {"endpoint": "m3-interactive"},
                60 + OTHER_INTERVAL,
                "detection.py maintenance (1 min) + one evaluation",
                routed=False,
            ),
        ),
        only=(cv.ALERT_MAINTENANCE,),
        maintenance=True,
        restart_monitor=15,
    ),
    Fault(
        "probes-failing",
        "half of m3-interactive's completions answer 500, /health ok",
        18,
        25,
        _set("m3-interactive", error_rate=0.5),
        _clear("m3-interactive"),
        ("m3-interactive",),
        INTERACTIVE,
        (
            Expect(
                cv.ALERT_PROBES_FAILING,
                {"endpoint": "m3-interactive"},
                _operational("probes-failing"),
                "detection.py probes-failing + scrape",
            ),
            _page("interactive-32k", "availability", 0.5),
        ),
        forbidden=(cv.ALERT_MONITOR_DOWN,),
    ),
    Fault(
        "slow-preprocessing",
        "m3-interactive's API server takes 6 s more per request (TTFT > 5 s)",
        27,
        38,
        _set("m3-interactive", preprocess_delay=6.0),
        _clear("m3-interactive"),
        ("m3-interactive",),
        INTERACTIVE,
        (_page("interactive-32k", "ttft-p99", 1.0),),
        forbidden=NEVER_AFTER_RECOVERY,
    ),
)


def _matches(episode: dict[str, Any], alert: str, labels: dict[str, str]) -> bool:
    return episode["alertname"] == alert and all(episode["labels"].get(k) == v for k, v in labels.items())


def _interval(alert: str) -> int:
    return SLO_INTERVAL if alert in cv.SLO_ALERT_NAMES else OTHER_INTERVAL


def _first(episodes: list[dict[str, Any]], onset: float) -> tuple[float | None, float | None]:
    """The first firing at or after ``onset``, and since when one was already firing at the onset
    (None: none was)."""
    before = [e["firing"] for e in episodes if e["firing"] is not None and e["firing"] < onset <= e["last"]]
    after = sorted(e["firing"] for e in episodes if e["firing"] is not None and e["firing"] >= onset)
    return (after[0] if after else None), (min(before) if before else None)


def _delivered(deliveries: list[dict[str, Any]], ex: Expect, since: float) -> float | None:
    for d in deliveries:
        for a in (d["body"] or {}).get("alerts", []):
            if (
                a["status"] == "firing"
                and d["at"] >= since
                and _matches(
                    {"alertname": a["labels"]["alertname"], "labels": a["labels"]}, ex.alert, ex.labels
                )
            ):
                return float(d["at"])
    return None


def expected_rows(
    onsets: dict[str, float], timeline: list[dict[str, Any]], deliveries: list[dict[str, Any]]
) -> list[dict[str, str]]:
    joined = episodes(timeline)
    return [_row(f, ex, _opened(f, onsets), joined, deliveries) for f in FAULTS for ex in f.expect]


def _row(
    f: Fault, ex: Expect, onset: float, timeline: list[dict[str, Any]], deliveries: list[dict[str, Any]]
) -> dict[str, str]:
    """One expectation judged. An alert already firing at the onset (an earlier fault's page held
    by its long windows) cannot show this fault's detection: "not measured", never "met"."""
    fired = {
        engine: _first(
            [e for e in timeline if e["engine"] == engine and _matches(e, ex.alert, ex.labels)], onset
        )
        for engine in ("prometheus", "vmalert")
    }
    (prom, already), (vm, _) = fired["prometheus"], fired["vmalert"]
    got = _delivered(deliveries, ex, onset) if ex.routed else None
    late_vm = None if prom is None or vm is None else vm - prom
    ok = (
        prom is not None
        and prom - onset <= ex.target
        and late_vm is not None
        and late_vm <= 2 * _interval(ex.alert)
        and (not ex.routed or (got is not None and got - prom <= DELIVERY))
    )
    verdict = "met" if ok else "MISSED"
    if already is not None:
        verdict = f"not measured: firing since {(already - onset) / 60:+.1f} min (an earlier fault)"
    return {
        "fault": f.name,
        "alert": ex.alert,
        "labels": json.dumps(ex.labels),
        "target": f"{ex.target / 60:.2f} min ({ex.why})",
        "prometheus": _minutes(prom, onset),
        "vmalert": _minutes(vm, onset) + ("" if late_vm is None else f" ({late_vm:+.0f} s)"),
        "delivered": _delivery(ex, got, prom),
        "verdict": verdict,
    }


def _opened(f: Fault, onsets: dict[str, float]) -> float:
    """When the fault began: its injection, or for a maintenance fault the window's start (the
    whole minute ``phase`` seconds before the errors begin)."""
    return onsets[f.name] - (f.phase if f.maintenance else 0.0)


def _delivery(ex: Expect, got: float | None, prom: float | None) -> str:
    if not ex.routed:
        return "not routed (info: the monitor's receiver only)"
    return "never" if got is None or prom is None else f"{got - prom:+.0f} s after firing"


def _minutes(at: float | None, onset: float) -> str:
    return "never" if at is None else f"{(at - onset) / 60:.2f} min"


def _explained(e: dict[str, Any], onsets: dict[str, float]) -> bool:
    for f in FAULTS:
        if f.name not in onsets:
            continue
        start, end = _opened(f, onsets), onsets.get(f"{f.name}:end")
        if not start <= e["firing"] <= (end or e["firing"]) + GRACE:
            continue
        if f.only is not None:
            if e["alertname"] in f.only:
                return True
            continue
        ours = e["labels"].get("endpoint") in f.endpoints or e["labels"].get(cv.L_CLASS) in f.classes
        if ours and e["alertname"] not in f.forbidden:
            return True
    return False


def episodes_outside(onsets: dict[str, float], timeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Firing episodes no fault explains (false alerts), in either engine."""
    return [e for e in episodes(timeline) if e["firing"] is not None and not _explained(e, onsets)]


#: A timeline without the engines' ``activeAt`` (the first runs, 2026-12-04) splits an episode
#: where a poll was late; a run first seen already firing less than this after the last one ended
#: continues it.
POLL_GAP = 60.0


def episodes(timeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The timeline's episodes, those split only by a late poll joined again."""
    ordered = sorted(
        timeline, key=lambda e: (e["engine"], json.dumps(e["labels"], sort_keys=True), e["pending"])
    )
    out: list[dict[str, Any]] = []
    for e in ordered:
        prev = out[-1] if out else None
        if (
            prev is not None
            and "active_at" not in e
            and (prev["engine"], prev["labels"]) == (e["engine"], e["labels"])
            and prev["firing"] is not None
            and e["firing"] == e["pending"]
            and e["pending"] - prev["last"] < POLL_GAP
        ):
            prev["last"] = e["last"]
            continue
        out.append(dict(e))
    return out
