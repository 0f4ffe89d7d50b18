"""Pieces of the service tested without a process: the capped reader, the body deadline, readiness,
log formats, bounded memory of the jobs and the exporter following a reloaded model."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from starlette.requests import Request

from monitor.exporter import Exporter
from monitor.model import Model, load_model
from monitor.scrape.collector import read_text
from monitor.service import jobs as jobs_mod
from monitor.service.jobs import Jobs
from monitor.service.logs import JsonFormatter, LogfmtFormatter
from monitor.service.readiness import readiness
from monitor.service.receivers import Receivers
from monitor.slo.metrics import SLOMetrics
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import probe_op
from monitor.web.body import BodyTooLarge, read_capped
from tests.service.live import config_doc
from tests.store.helpers import T0, probe

pytestmark = pytest.mark.timeout(60)


async def _chunks(*parts: bytes, then_fail: bool = False) -> AsyncIterator[bytes]:
    for part in parts:
        yield part
    if then_fail:
        raise AssertionError("read past the point where the cap was known to be exceeded")


def test_the_capped_reader_stops_before_reading_past_the_cap() -> None:
    assert asyncio.run(read_capped(_chunks(b"ab", b"cd"), 4, "4")) == b"abcd"
    with pytest.raises(BodyTooLarge, match="Content-Length 5 exceeds the cap of 4"):
        asyncio.run(read_capped(_chunks(then_fail=True), 4, "5"))  # not a byte read
    with pytest.raises(BodyTooLarge, match="body exceeds the cap of 4"):
        asyncio.run(read_capped(_chunks(b"abc", b"de", then_fail=True), 4, None))  # chunked: stops at "de"
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_capped(_chunks(b"abcde"), 4, "3"))  # a lying Content-Length does not help


@pytest.fixture
def model(tmp_path: Path) -> Model:
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(config_doc(tmp_path, 9464)))
    m = load_model(tmp_path / "m.yaml")
    upgrade(m.storage.url)
    return m


def test_a_body_that_never_finishes_is_refused_in_time(model: Model) -> None:
    """A client that sends headers and then drips nothing gets 408 after the body deadline."""

    async def run() -> tuple[int, float]:
        exporter = Exporter(model)
        store = Store(model.storage.url)
        receivers = Receivers(exporter, Jobs(model, store, exporter), body_timeout=0.3)

        async def receive() -> dict[str, Any]:
            await asyncio.sleep(3600)
            return {}

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/alertmanager",
            "headers": [],
            "query_string": b"",
        }
        response = await receivers.alertmanager(Request(scope, receive))
        store.close()
        return response.status_code, exporter.service.rejected.labels("alertmanager", "too_slow")._value.get()

    assert asyncio.run(asyncio.wait_for(run(), 5)) == (408, 1.0)


def test_readiness_names_every_reason() -> None:
    ok = {"scheduler_running": True, "backlog": 0, "max_backlog": 100, "store_away": None,
          "last_evaluation": 100.0, "now": 110.0, "step": 60.0}  # fmt: skip
    assert readiness(**ok).ready
    assert readiness(**{**ok, "backlog": 99}).ready  # the database is back, the spool is being replayed
    assert readiness(**{**ok, "backlog": 7, "store_away": "sqlite:///m.db"}).reasons == (
        "the store is away: sqlite:///m.db (7 writes spooled, written when it answers)",
    )
    bad = readiness(
        scheduler_running=False, backlog=100, max_backlog=100, store_away=None, last_evaluation=0.0,
        now=121.0, step=60.0,
    )  # fmt: skip
    assert not bad.ready and len(bad.reasons) == 3
    assert (
        bad.body()["status"] == "not ready"
        and "121s ago (limit: two steps, 120s)" in bad.body()["reasons"][2]
    )
    assert readiness(**{**ok, "last_evaluation": None}).reasons == ("no SLO evaluation has completed yet",)


def _record(msg: str, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            import sys

            info = sys.exc_info()
    return logging.LogRecord("monitor.x", logging.WARNING, __file__, 1, msg, (), info)


def test_log_formats() -> None:
    line = json.loads(JsonFormatter().format(_record('refused "x"\nnext', exc=True)))
    assert line["level"] == "warning" and line["logger"] == "monitor.x" and line["msg"] == 'refused "x"\nnext'
    assert line["ts"].endswith("Z") and "ValueError: boom" in line["exc"]
    text = LogfmtFormatter().format(_record('a "quoted" msg'))
    assert ' level=warning logger=monitor.x msg="a \\"quoted\\" msg"' in text and text.startswith("ts=")


def test_the_jobs_hold_a_constant_amount_per_endpoint(model: Model, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand scrapes later the jobs hold what they held after the second (the store has the rest)."""
    store = Store(model.storage.url)
    exporter = Exporter(model)
    jobs = Jobs(model, store, exporter)

    page = (
        Path(__file__).resolve().parents[1] / "fixtures" / "metrics" / "vllm-0.13.0.metrics.txt"
    ).read_text()
    reading = read_text(page)  # a real page: the drift guard judges it on every scrape too

    async def collect(*_: Any) -> tuple[object, object]:
        return reading, object()

    async def nothing(*_: Any) -> None:
        return None

    monkeypatch.setattr(jobs_mod, "collect", collect)
    monkeypatch.setattr(jobs_mod, "reading_op", lambda *_: {})
    monkeypatch.setattr(jobs, "write", nothing)
    monkeypatch.setattr(jobs, "_fingerprint", nothing)

    def held() -> int:
        return sum(len(v) for v in vars(jobs).values() if isinstance(v, list | dict | set))

    async def scrape(n: int) -> None:
        for _ in range(n):
            await jobs.scrape(model.endpoints[0])

    asyncio.run(scrape(2))
    after_two = held()
    asyncio.run(scrape(1000))
    assert held() == after_two
    store.close()


def test_the_exporter_follows_a_reloaded_model(model: Model, tmp_path: Path) -> None:
    exporter = Exporter(model)
    exporter.health_up.labels("pool").set(1)
    doc = config_doc(tmp_path, 9464)
    doc["endpoints"][0]["name"] = "pool-b"
    doc["request_classes"][0]["slos"].append(
        {"name": "ttft", "sli": "ttft", "threshold": "1.234s", "objective": 90}
    )
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(doc))
    exporter.apply(load_model(tmp_path / "n.yaml"))
    families = {f.name: f for f in text_string_to_metric_families(exporter.render().decode())}
    endpoints = {s.labels.get("endpoint") for f in families.values() for s in f.samples} - {None}
    assert endpoints == {"pool-b"}  # the removed endpoint's series are gone, the new one's exist
    buckets = {s.labels["le"] for s in families["m3mon_probe_ttft_seconds"].samples if "le" in s.labels}
    assert "1.234" in buckets  # the new threshold is a bucket edge


def _slo_samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for metric in registry.collect()
        if metric.name.startswith("m3mon_slo_")
        for s in metric.samples
    }


def test_the_slo_gauges_show_each_slos_newest_stored_evaluation(model: Model) -> None:
    """The gauges are set from what each run evaluated (not re-read from the store): after late
    writes re-evaluate older steps they still equal gauges built from the newest stored evaluations."""
    store = Store(model.storage.url)
    exporter = Exporter(model)
    clock = [T0 + 65.0]
    jobs = Jobs(model, store, exporter, clock=lambda: clock[0])
    for minute, late in ((1, False), (2, False), (3, True), (4, True), (4, False)):
        at = T0 + minute * 60 - 30 - (90 if late else 0)  # late: into a step evaluated already
        result = replace(
            probe(at, reason="timeout" if late else None), endpoint="pool", request_class="chat-32k"
        )
        store.apply([probe_op(model, result)])
        clock[0] = T0 + minute * 60 + 65.0
        jobs.evaluate()
        oracle = CollectorRegistry()
        SLOMetrics(oracle).update(store.latest_evaluations())
        shown = _slo_samples(exporter.registry)
        assert shown == _slo_samples(oracle), minute
    assert ("m3mon_slo_attainment_ratio", _labels(window="5m")) in shown  # the late timeouts show
    assert shown[("m3mon_slo_attainment_ratio", _labels(window="1h"))] == pytest.approx(3 / 5)
    store.close()


def _labels(**extra: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"class": "chat-32k", "slo": "availability", "sli": "availability", **extra}.items()))
