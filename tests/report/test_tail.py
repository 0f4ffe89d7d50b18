"""Which stage owns the tail (issue 25, tail attribution), against shares counted by hand from
hand-built probe requests stored through the store's own write path, and in every format."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.bottleneck.tail import TailShare
from monitor.model import Model
from monitor.probes.result import ProbeResult, Timings
from monitor.report.collect_probes import ProbeFacts
from monitor.report.redact import Redactor
from monitor.scrape.gpu_signals import GpuDeviceSignals, GpuSignals
from monitor.scrape.signals import EngineSignals, Signals
from monitor.store import Store
from monitor.store.ops import gpu_op, probe_op, signals_op
from tests.report.stores import WEEK, rendered, stored

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat, few]}
request_classes:
  - {name: chat, max_context_tokens: 32768, probes: [chat], slos: [{name: a, sli: availability, objective: 99}]}
  - {name: few, max_context_tokens: 32768, probes: [chat], slos: [{name: a, sli: availability, objective: 99}]}
report: {timezone: UTC}
"""
START = datetime(2026, 11, 23, tzinfo=UTC)
T = START.timestamp() + 3600


def _probe(cls: str, k: int, slow: bool) -> ProbeResult:
    # every request: network 0.05 s, prefill 0.4 s, decode 1.5 s; a slow one queues 2.55 s, not 0.05
    queue = 2.55 if slow else 0.05
    ttft = 0.05 + queue + 0.4
    timings = Timings(ttft=ttft, e2e=ttft + 1.5, server_queue=queue, server_prefill=0.4, server_decode=1.5,
                      network=0.05)  # fmt: skip
    at = T + 60 * k
    return ProbeResult("ep", cls, "chat", at, None, timings, finished_at=at + ttft + 1.5)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Model, str]:
    probes = [_probe("chat", k, slow=k in (18, 19)) for k in range(20)] + [
        _probe("few", k, False) for k in range(5)
    ]
    return stored(tmp_path_factory.mktemp("tail"), CONFIG, lambda model: [probe_op(model, p) for p in probes])


def _tail(store: tuple[Model, str]) -> dict[tuple[str, str, str], TailShare]:
    model, url = store
    db = Store(url)
    try:
        with db.session() as s:
            facts = ProbeFacts(model, s, WEEK, Redactor())
            return {(t.request_class, t.metric, t.band): t for t in facts.tail()}
    finally:
        db.close()


def test_the_tail_is_the_queue_and_the_median_is_prefill(store: tuple[Model, str]) -> None:
    tail = _tail(store)
    # TTFT: 18 requests of 0.5 s, 2 of 3.0 s. Nearest-rank P95 is the 19th (3.0 s): the tail is the two
    # slow ones, 6.0 s, of which queue 5.1, prefill 0.8, network 0.1
    t = tail[("chat", "ttft", "p95")]
    assert (t.requests, t.bound, t.dominant) == (2, pytest.approx(3.0), "queue")
    assert dict(t.shares) == pytest.approx({"retry": 0.0, "network": 0.1 / 6, "tokenization": 0.0, "queue": 5.1 / 6,
                                            "prefill": 0.8 / 6, "other": 0.0}, abs=1e-9)  # fmt: skip
    # P50 is the 10th (0.5 s): the 18 fast ones, 9.0 s: prefill 7.2, queue 0.9, network 0.9
    t = tail[("chat", "ttft", "p50")]
    assert (t.requests, t.dominant) == (18, "prefill")
    assert dict(t.shares)["prefill"] == pytest.approx(0.8) and dict(t.shares)["queue"] == pytest.approx(0.1)
    # e2e: the slow ones took 4.5 s each: queue 5.1 of 9.0, decode 3.0, prefill 0.8, network 0.1
    t = tail[("chat", "e2e", "p95")]
    assert (t.requests, t.dominant) == (2, "queue")
    assert dict(t.shares)["decode"] == pytest.approx(3.0 / 9) and dict(t.shares)["queue"] == pytest.approx(
        5.1 / 9
    )
    assert dict(t.shares)["tool_turnaround"] == 0.0
    few = tail[("few", "ttft", "p95")]
    assert few.shares == () and few.why_none == (
        "5 probe request(s) with a server view (per-request metrics or spans); 20 needed"
    )


def test_too_few_requests_for_p99(store: tuple[Model, str]) -> None:
    """20 requests: enough for the P95+ band (its tail holds two), not for P99+ (100 needed, docs):
    the report says "not enough requests" instead of a share, in every format."""
    tail = _tail(store)
    p99 = tail[("chat", "ttft", "p99")]
    assert (p99.shares, p99.bound, p99.requests) == ((), None, 20)
    report = rendered(*store)
    line = ("P99+ TTFT of chat: not enough requests (20 probe request(s) with a server view (per-request "
            "metrics or spans); 100 needed)")  # fmt: skip
    assert line in report.markdown.replace("\\", "") and line in html.unescape(report.html)
    (entry,) = [
        e
        for e in json.loads(report.json)["tail"]
        if (e["class"], e["latency"], e["band"]) == ("chat", "e2e", "p99")
    ]
    assert (entry["shares"], entry["dominant"], entry["min_requests"]) == ({}, None, 100)
    assert "P99+ |" not in report.markdown  # no table row without a number


def test_every_format_says_it(store: tuple[Model, str]) -> None:
    report = rendered(*store)
    line = "P95+ TTFT of chat (2 requests from 3.00 s): 85% queue; at P50 and below: 80% prefill"
    assert line in report.markdown.replace("\\", "") and line in html.unescape(report.html)
    doc = json.loads(report.json)
    (entry,) = [e for e in doc["tail"] if (e["class"], e["latency"], e["band"]) == ("chat", "ttft", "p95")]
    assert (
        entry["dominant"] == "queue"
        and entry["requests"] == 2
        and entry["shares"]["queue"] == pytest.approx(0.85)
    )


def test_the_verdict_reads_the_same_tail(store: tuple[Model, str]) -> None:
    """The week's verdict (docs/bottleneck.md) in every format: chat's TTFT tail is 85 % queue, but
    two slow requests of twenty are not a pattern (a cause needs three behind it), so no
    bottleneck; "few" has 5 requests and no server view, too few to say, and says what it lacks.
    The verdict's shares are the tail section's numbers, not a second computation."""
    report = rendered(*store)
    doc = json.loads(report.json)
    verdicts = {v["class"]: v for v in doc["bottleneck"]}
    assert (verdicts["chat"]["verdict"], verdicts["chat"]["stage"]) == ("none", None)
    assert (verdicts["few"]["verdict"], verdicts["few"]["stage"]) == ("insufficient_evidence", None)
    assert "5 probe request(s) with a server view" in verdicts["few"]["missing"][0]
    assert verdicts["chat"]["runs"] == 20 and verdicts["chat"]["retried"] == 0
    for e in doc["tail"]:
        if e["class"] == "chat" and e["why_none"] is None:
            assert verdicts["chat"]["tail_shares"][f"{e['latency']}_{e['band']}"] == e["shares"]
    assert "ttft_p99" not in verdicts["chat"]["tail_shares"]  # 20 requests: no P99+ band to read
    line = "chat: no bottleneck: probes P95+ TTFT 85% queue, e2e 57% queue"
    assert line in report.markdown.replace("\\", "") and line in html.unescape(report.html)


def _gpu(at: float, sm: float) -> GpuSignals:
    # DRAM activity as dcgm-exporter's default set carries it (SM activity alone cannot show room)
    values = {"sm_active": sm, "tensor_active": sm / 2, "memory_active": sm * 0.6}
    devices = {g: GpuDeviceSignals(g, None, dict(values), {}, {}) for g in "01"}
    return GpuSignals("ep", "dcgm", at, at - 60, devices)


def _interval(end: float, waiting: float) -> Signals:
    return Signals(
        "ep", "vllm", "vllm-v1-engine", "m", end, end - 60, False, {}, EngineSignals(waiting=waiting)
    )


@pytest.mark.parametrize(
    ("week_sm", "waiting", "growth", "verdict"),
    [
        ((0.9, 1.0), (0.0, 1.0, 3.0, 6.0), 4.0, "gpu_bound"),
        ((0.9, 1.0), (2.0, 3.0, 3.0, 2.0), 0.0, "gpu_bound"),
        ((0.3, 0.5), (0.0, 1.0, 3.0, 6.0), 4.0, "scheduler_bound"),
        ((0.9, 1.0), (), None, "gpu_bound"),
        (None, (0.0, 1.0, 3.0, 6.0), 4.0, "queue_bound"),
    ],
    ids=["saturated-growing", "saturated-flat", "idle", "saturated-no-queue-reading", "no-gpu-reading"],
)
def test_stored_gpu_samples_tell_gpu_bound_from_the_scheduler(
    tmp_path: Path,
    week_sm: tuple[float, float] | None,
    waiting: tuple[float, ...],
    growth: float | None,
    verdict: str,
) -> None:
    """The report reads the GPU activity the service stored per GPU (gpu_samples) and the waiting
    queue of the stored intervals over its period (docs/bottleneck.md): three requests of twenty
    queued 2.55 s, so the queue is a cause; it is GPU-bound when the GPUs were busy (SM activity
    0.9 and 1.0, both at or above 85 %) whether the queue grew (waiting 0, 1 then 3, 6: +4), held
    flat (2, 3 then 3, 2: saturation with a flat queue is still saturation) or was not read;
    scheduler-bound at 30-50 % SM activity; queue-bound without a GPU sample in the week. A
    saturated GPU sample and a long queue before the week are not evidence for it."""
    probes = [_probe("chat", k, slow=k in (17, 18, 19)) for k in range(20)]
    gpus = [_gpu(START.timestamp() - 600, 0.99)]
    if week_sm is not None:
        gpus += [_gpu(T, week_sm[0]), _gpu(T + 3600, week_sm[1])]
    before = [_interval(START.timestamp() - 60, 50.0)] if waiting else []
    intervals = before + [_interval(T + 600 * (i + 1), w) for i, w in enumerate(waiting)]
    model, url = stored(tmp_path, CONFIG, lambda m: [*(probe_op(m, p) for p in probes), *map(gpu_op, gpus),
                                                     *(signals_op(m, "ep", s) for s in intervals)])  # fmt: skip
    doc = json.loads(rendered(model, url).json)
    chat = next(v for v in doc["bottleneck"] if v["class"] == "chat")
    assert (chat["verdict"], chat["stage"]) == (verdict, "queue"), chat["reason"]
    hottest = chat["hottest_gpu"]
    if week_sm is None:
        assert hottest is None
    else:  # the median of each GPU's samples in the week (the sample before it is not one of them)
        assert hottest["activity"] == pytest.approx(sum(week_sm) / 2) and hottest["counter"] == "sm_active"
    assert chat["queue_growth"] == (None if growth is None else pytest.approx(growth))
