"""A report ends at ``--now``: built again on the same database it is the same, byte for byte, and
whatever the store learns afterwards about later times does not change it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from monitor.probes.result import ProbeResult
from monitor.report import generate, periods
from monitor.slo.evaluate import evaluate_counts
from monitor.store import Store
from monitor.store.ops import alertmanager_op, probe_op, spans_op
from monitor.traces import ServerSpan
from tests.report import week as W

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)  # Thursday of the reported week
LATER = NOW.timestamp() + 600


def _files(wk: W.Week) -> dict[str, bytes]:
    store = Store(wk.url)
    try:
        data = generate.build(wk.model, store, periods.iso_week(W.WEEK, periods.zone("UTC")), NOW)
    finally:
        store.close()
    return generate.render(data).contents()  # all four files, the PDF too


def _alert(status: str) -> dict[str, object]:
    alert = {"status": status, "fingerprint": "late", "startsAt": "2026-11-26T08:50:00Z",
             "endsAt": "2026-11-26T09:20:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
             "labels": {"alertname": "SLOBurn", "class": "chat", "slo": "availability", "severity": "page"},
             "annotations": {"summary": "late"}}  # fmt: skip
    return {"version": "4", "status": status, "alerts": [alert]}


def _later_news(wk: W.Week) -> None:
    """What a live store records after NOW: a failed probe and its span, the alert's resolution,
    evaluations of later instants."""
    late = ProbeResult("ep-a", "chat", "chat", LATER, "timeout", trace_id="a" * 32, finished_at=LATER + 60)
    in_flight = ProbeResult("ep-a", "agent", "agent_session", NOW.timestamp() - 5, "timeout",
                            finished_at=NOW.timestamp() + 55)  # started before NOW, known after  # fmt: skip
    span = ServerSpan("b" * 32, "c" * 16, "llm_request", NOW.timestamp() - 1, LATER, queue=9.0, ttft=9.5)
    store = Store(wk.url)
    try:
        store.apply([probe_op(wk.model, late), probe_op(wk.model, in_flight), spans_op([span])])
        store.apply([alertmanager_op(_alert("resolved"), LATER)])
        with store.counter() as counts:
            store.save_evaluations([evaluate_counts(s, LATER, counts) for s in wk.model.slos])
    finally:
        store.close()


def test_the_same_command_gives_the_same_report_even_after_the_store_moved_on(tmp_path: Path) -> None:
    wk = W.build(tmp_path)
    store = Store(wk.url)
    try:
        store.apply([alertmanager_op(_alert("firing"), NOW.timestamp() - 300)])  # firing at NOW
    finally:
        store.close()
    first = _files(wk)
    assert _files(wk) == first  # same database, same bytes
    doc = json.loads(first["report.json"])
    assert doc["as_of"] == "2026-11-26T09:00:00+00:00"
    assert doc["series"][0]["points"][-1]["at"] == doc["as_of"]
    late = [i for i in doc["incidents"] if i["summary"] == "late"]
    assert [(i["ended_at"], i["duration_seconds"]) for i in late] == [(None, 600.0)]  # firing at NOW
    _later_news(wk)
    assert _files(wk) == first  # nothing after NOW is read
