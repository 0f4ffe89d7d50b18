"""A class whose probes carry no server view takes queue, prefill and decode from its pool's
histograms, and says so; "no data" only where nothing has the part."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.model import load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report.collect_probes import ProbeFacts
from monitor.report.data import Period
from monitor.report.redact import Redactor
from monitor.scrape.signals import EngineSignals, Histogram, Signals
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op, signals_op

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep-x, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [bare]}
  - {name: ep-y, base_url: "http://127.0.0.1:10", backend: vllm, model: m, classes: [none]}
request_classes:
  - {name: bare, max_context_tokens: 32768, probes: [chat], slos: [{name: a, sli: availability, objective: 99}]}
  - {name: none, max_context_tokens: 32768, probes: [chat], slos: [{name: a, sli: availability, objective: 99}]}
report: {timezone: UTC}
"""
START = datetime(2026, 11, 23, tzinfo=UTC)
T = START.timestamp()


def _interval(end: float, queue: tuple[float, float], prefill: tuple[float, float]) -> Signals:
    edges = (1.0, float("inf"))

    def h(total: float, n: float) -> Histogram:
        return Histogram(edges, (n, n), total, n)

    eng = EngineSignals(finished={"stop": queue[1]},
                        histograms={"queue": h(*queue), "prefill": h(*prefill), "decode": h(8.0, queue[1])})  # fmt: skip
    return Signals("ep-x", "vllm", "vllm-v1-engine", "m", end, end - 3600, False, {"0": eng}, eng)


def test_the_pool_histograms_fill_in_and_name_themselves(tmp_path: Path) -> None:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(CONFIG)
    model = load_model(cfg)
    url = f"sqlite:///{tmp_path / 'b.db'}"
    upgrade(url)
    bare = Timings(ttft=0.5, e2e=2.0)  # no per-request metrics, no trace: no server view
    probes = [
        ProbeResult("ep-x", "bare", "chat", T + 600 * k, None, bare, finished_at=T + 600 * k + 2)
        for k in (1, 7)
    ]
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints), *(probe_op(model, p) for p in probes)])
        store.apply([signals_op(model, "ep-x", _interval(T + 3600, (2.0, 4.0), (6.0, 4.0))),
                     signals_op(model, "ep-x", _interval(T + 7200, (1.0, 1.0), (4.0, 1.0)))])  # fmt: skip
        week = Period("w", START, datetime(2026, 11, 30, tzinfo=UTC))
        with store.session() as s:
            facts = ProbeFacts(model, s, week, Redactor())
            rows = facts.breakdown()
            brk = {b.request_class: b for b in rows if b.population != "probe requests"}
            own = {b.request_class: b for b in rows if b.population == "probe requests"}
            series = {x.request_class: x for x in facts.breakdown_series([T, T + 3600, T + 7200], UTC)}
    finally:
        store.close()
    b = brk["bare"]  # one row, one population: the pool's 5 requests; the 2 probes a row of their own
    assert (b.count, own["bare"].count) == (5, 2)
    assert own["bare"].part("queue") is None and own["bare"].part("retry") == 0.0
    assert b.part("queue") == pytest.approx(3.0 / 5) and b.part("prefill") == pytest.approx(10.0 / 5)
    assert b.part("decode") == pytest.approx(16.0 / 5) and b.part("network") is None
    assert (
        b.source("queue") == b.source("decode") == "server histograms (ep-x)" and b.source("network") is None
    )
    first, second = series["bare"].points  # each hour from its own interval, with its probe
    assert (first.count, first.part("queue"), second.count, second.part("queue")) == (1, 0.5, 1, 1.0)
    assert "none" not in brk  # no pool data: no pool row
    empty = own["none"]
    assert (
        empty.count == 0
        and all(v is None for _, v in empty.parts)
        and all(v is None for _, v in empty.sources)
    )


def test_a_shared_pools_histograms_say_they_are_not_the_classs(tmp_path: Path) -> None:
    """Issue 24, finding 2: a class on a pool it shares took "mean seconds per probe request" from
    the whole pool's histograms (10 s where its probes took 0.8 s). The numbers stay, named as what
    they are: the pool's requests, shared with the other class."""
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(CONFIG.replace("classes: [bare]}", "classes: [bare, none]}"))
    model = load_model(cfg)
    url = f"sqlite:///{tmp_path / 'b.db'}"
    upgrade(url)
    store = Store(url)
    try:
        probe = ProbeResult(
            "ep-x", "bare", "chat", T + 600, None, Timings(ttft=0.5, e2e=0.8), finished_at=T + 601
        )
        store.apply([endpoints_op(model.endpoints), probe_op(model, probe),
                     signals_op(model, "ep-x", _interval(T + 3600, (2.0, 4.0), (6.0, 4.0)))])  # fmt: skip
        week = Period("w", START, datetime(2026, 11, 30, tzinfo=UTC))
        with store.session() as s:
            (b,) = [x for x in ProbeFacts(model, s, week, Redactor()).breakdown()
                    if x.request_class == "bare" and x.population != "probe requests"]  # fmt: skip
    finally:
        store.close()
    assert b.part("prefill") == pytest.approx(6.0 / 4)  # still the pool's mean, as measured
    assert b.source("prefill") == "server histograms (ep-x, shared with none)"
    assert b.population == "all requests of ep-x (shared with none: not this class's requests alone)"
