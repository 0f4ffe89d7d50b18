"""The generated routing, in a real Alertmanager: each endpoint's operational page is its own group.

Alertmanager sends a new group after ``group_wait`` and adds alerts to an existing group only at
its next ``group_interval`` flush. Grouped by ``alertname, class, slo`` alone, every endpoint's
``VLLMHealthyButProbesFailing`` (no class, no SLO label) fell into one group, so a second
endpoint's page waited for the first one's group interval (5 min) instead of ``group_wait``.

The generated alertmanager.yml runs unchanged except for its timing, scaled so the test is short
and the two delays stay far apart: ``group_wait`` 2 s, ``group_interval`` 60 s. Alerts are POSTed to
Alertmanager's API as Prometheus sends them (the generated labels), receivers are a capture server.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest

from monitor import conventions as cv
from monitor.generate.alertmanager import alertmanager_config
from monitor.generate.probe_rules import probes_failing_alert
from monitor.generate.slo_rules import alerts as slo_alerts
from monitor.model import Model, load_model
from tests.e2e.servers import Capture
from tests.generate.conftest import EXAMPLE, REPO
from tests.support import localhttp
from tests.support.alertmanager import running_alertmanager
from tests.support.prometheus import wait_for

pytestmark = pytest.mark.timeout(120)

GROUP_WAIT, GROUP_INTERVAL = 2, 60  # seconds
#: How late past group_wait a notification may arrive on a busy machine (still far below the interval).
SLACK = 8


def _config(model: Model, capture: Capture) -> dict[str, Any]:
    config = alertmanager_config(model)
    config["route"].update(group_wait=f"{GROUP_WAIT}s", group_interval=f"{GROUP_INTERVAL}s")
    for receiver in config["receivers"]:
        receiver["webhook_configs"] = [
            {"url": f"{capture.base_url}/{receiver['name']}", "send_resolved": True}
        ]
    return config


def _post(am: str, labels: list[dict[str, str]]) -> None:
    now = dt.datetime.now(dt.UTC).isoformat()
    body = [{"labels": ls, "annotations": {}, "startsAt": now} for ls in labels]
    localhttp.post(f"{am}/api/v2/alerts", json=body, timeout=5).raise_for_status()


def _labels(rule: dict[str, Any], **extra: str) -> dict[str, str]:
    return {"alertname": str(rule["alert"]), **rule["labels"], **extra}


def _delivered(capture: Capture, receiver: str, key: str, value: str) -> list[dict[str, Any]]:
    """Notifications to ``receiver`` whose alerts include one labelled ``key=value``."""
    with capture.lock:
        bodies = list(capture.posts.get(f"/{receiver}", []))
    return [b for b in bodies if any(a["labels"].get(key) == value for a in b["alerts"])]


def test_a_second_endpoint_page_arrives_within_group_wait_not_the_group_interval(tmp_path: Path) -> None:
    model = load_model(REPO / EXAMPLE)
    pager = model.alerting.page_receiver
    rule = probes_failing_alert(model).rule(model.alerting)
    with Capture() as capture, running_alertmanager(_config(model, capture), tmp_path) as am:
        first = _labels(rule, endpoint="m3-interactive")
        _post(am, [first])
        wait_for(lambda: _delivered(capture, pager, cv.L_ENDPOINT, "m3-interactive"), 30, "the first page")
        sent = time.monotonic()
        _post(am, [first, _labels(rule, endpoint="m3-repo")])  # Prometheus resends what still fires
        wait_for(lambda: _delivered(capture, pager, cv.L_ENDPOINT, "m3-repo"), GROUP_WAIT + SLACK,
                 f"the second endpoint's page within group_wait ({GROUP_WAIT} s) + {SLACK} s")  # fmt: skip
        took = time.monotonic() - sent
        bodies = _delivered(capture, pager, cv.L_ENDPOINT, "m3-interactive")
        bodies += _delivered(capture, pager, cv.L_ENDPOINT, "m3-repo")
    assert took < GROUP_INTERVAL / 2, took
    for body in bodies:  # one endpoint per notification, named in its group labels
        assert {a["labels"][cv.L_ENDPOINT] for a in body["alerts"]} == {body["groupLabels"][cv.L_ENDPOINT]}


def test_slo_pages_group_by_class_and_slo(tmp_path: Path) -> None:
    """Two SLOs' burn pages are two notifications, each naming its class and SLO."""
    model = load_model(REPO / EXAMPLE)
    pager = model.alerting.page_receiver
    pages = [
        next(a for a in slo_alerts(model, slo) if a.name == cv.ALERT_BURN_PAGE).rule(model.alerting)
        for slo in model.slos[:2]
    ]
    with Capture() as capture, running_alertmanager(_config(model, capture), tmp_path) as am:
        _post(am, [_labels(r) for r in pages])
        for slo in model.slos[:2]:
            wait_for(lambda s=slo.name: _delivered(capture, pager, cv.L_SLO, s), GROUP_WAIT + SLACK, slo.name)
        bodies = [b for s in model.slos[:2] for b in _delivered(capture, pager, cv.L_SLO, s.name)]
    for body in bodies:
        assert len(body["alerts"]) == 1
        assert body["groupLabels"][cv.L_SLO] == body["alerts"][0]["labels"][cv.L_SLO]
        assert body["groupLabels"][cv.L_CLASS] == body["alerts"][0]["labels"][cv.L_CLASS]
