"""How the live run (field/live_run.py) judges a timeline: hand-built timelines, expected verdicts
written from field/faults.py's docstring (a target counted from the onset; vmalert within two
group intervals; delivery within group_wait + one evaluation; false = firing with no fault to
explain it)."""

from __future__ import annotations

import json
from typing import Any

from field import faults
from monitor import conventions as cv

T0 = 1_800_000_000.0
OUTAGE = faults.FAULTS[0]
PAGE = next(e for e in OUTAGE.expect if e.alert == cv.ALERT_BURN_PAGE)


def _episode(engine: str, labels: dict[str, str], pending: float, firing: float | None, last: float,
             **extra: Any) -> dict[str, Any]:  # fmt: skip
    return {"engine": engine, "alertname": labels["alertname"], "labels": labels, "pending": pending,
            "firing": firing, "last": last, **extra}  # fmt: skip


def _page_labels() -> dict[str, str]:
    return {"alertname": PAGE.alert, **PAGE.labels, "severity": "page"}


def _delivery(at: float, labels: dict[str, str]) -> dict[str, Any]:
    return {"at": at, "path": "/pager", "body": {"alerts": [{"status": "firing", "labels": labels}]}}


def _onsets() -> dict[str, float]:
    return {OUTAGE.name: T0, f"{OUTAGE.name}:end": T0 + 360}


def _page_row(timeline: list[dict[str, Any]], deliveries: list[dict[str, Any]]) -> dict[str, str]:
    rows = faults.expected_rows({**_onsets(), **_others()}, timeline, deliveries)
    return next(r for r in rows if r["fault"] == OUTAGE.name and r["alert"] == PAGE.alert
                and r["labels"] == json.dumps(PAGE.labels))  # fmt: skip


def _others() -> dict[str, float]:
    """Every other fault far later, so only the outage is judged here."""
    return {f.name: T0 + 10_000 + 1000 * i for i, f in enumerate(faults.FAULTS) if f is not OUTAGE}


def test_a_page_within_its_target_in_both_engines_and_delivered_in_time_is_met() -> None:
    fire = T0 + PAGE.target - 10
    labels = _page_labels()
    timeline = [_episode("prometheus", labels, fire, fire, fire + 300),
                _episode("vmalert", labels, fire + 50, fire + 50, fire + 300)]  # fmt: skip
    assert _page_row(timeline, [_delivery(fire + 31, labels)])["verdict"] == "met"


def test_late_prometheus_slow_vmalert_or_late_delivery_each_miss() -> None:
    labels = _page_labels()
    fire = T0 + PAGE.target - 10
    late = T0 + PAGE.target + 1
    cases = [
        ([_episode("prometheus", labels, late, late, late + 9), _episode("vmalert", labels, late, late, late + 9)],
         [_delivery(late + 1, labels)]),
        ([_episode("prometheus", labels, fire, fire, fire + 9),
          _episode("vmalert", labels, fire + 121, fire + 121, fire + 200)], [_delivery(fire + 1, labels)]),
        ([_episode("prometheus", labels, fire, fire, fire + 9), _episode("vmalert", labels, fire, fire, fire + 9)],
         [_delivery(fire + faults.DELIVERY + 1, labels)]),
    ]  # fmt: skip
    assert [_page_row(t, d)["verdict"] for t, d in cases] == ["MISSED"] * 3


def test_a_page_already_firing_at_the_onset_is_not_measured() -> None:
    labels = _page_labels()
    timeline = [_episode("prometheus", labels, T0 - 600, T0 - 600, T0 + 900),
                _episode("vmalert", labels, T0 - 540, T0 - 540, T0 + 900)]  # fmt: skip
    assert _page_row(timeline, [])["verdict"].startswith("not measured: firing since -10.0 min")


def test_a_late_poll_does_not_split_an_episode_but_a_new_pending_does() -> None:
    labels = {"alertname": cv.ALERT_ENDPOINT_DOWN, "endpoint": "m3-extended"}
    first = _episode("prometheus", labels, T0, T0 + 120, T0 + 200)
    after_gap = _episode("prometheus", labels, T0 + 215, T0 + 215, T0 + 400)  # seen firing at once
    refire = _episode("prometheus", labels, T0 + 430, T0 + 550, T0 + 600)  # pending again: new
    joined = faults.episodes([first, after_gap, refire])
    assert [(e["pending"], e["firing"], e["last"]) for e in joined] == [
        (T0, T0 + 120, T0 + 400),
        (T0 + 430, T0 + 550, T0 + 600),
    ]


def test_firing_with_no_fault_to_explain_it_is_a_false_alert() -> None:
    onsets = {**_onsets(), **_others()}
    theirs = _episode("prometheus", {"alertname": cv.ALERT_ENDPOINT_DOWN, "endpoint": "m3-extended"},
                      T0 + 60, T0 + 180, T0 + 300)  # fmt: skip
    ours = _episode("prometheus", {"alertname": cv.ALERT_ENDPOINT_DOWN, "endpoint": "m3-interactive"},
                    T0 + 60, T0 + 180, T0 + 300)  # fmt: skip
    after = _episode("vmalert", {"alertname": cv.ALERT_PROBES_FAILING, "endpoint": "m3-interactive"},
                     T0 + 400, T0 + 420, T0 + 500)  # forbidden after the outage  # fmt: skip
    late = _episode("prometheus", {"alertname": cv.ALERT_BURN_PAGE, "class": "agent", "slo": "availability"},
                    T0 + 360 + faults.GRACE + 5, T0 + 360 + faults.GRACE + 5, T0 + 900)  # fmt: skip
    false = faults.episodes_outside(onsets, [theirs, ours, after, late])
    assert {(e["alertname"], e["labels"].get("endpoint") or e["labels"].get("class")) for e in false} == {
        (cv.ALERT_ENDPOINT_DOWN, "m3-extended"),
        (cv.ALERT_PROBES_FAILING, "m3-interactive"),
        (cv.ALERT_BURN_PAGE, "agent"),
    }
