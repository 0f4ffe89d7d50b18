"""Tokenization and retries as stages of the report (issue 25): hand-built probe runs and vLLM /
gateway spans stored through the store's own write path; the breakdown's and the tail's figures
against values counted by hand from docs/report.md's definitions, in every format."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime

import pytest

from monitor.model import Model
from monitor.probes.result import ProbeResult, Timings
from monitor.report.collect_probes import ProbeFacts
from monitor.report.redact import Redactor
from monitor.store import Store
from monitor.store.ops import probe_op, spans_op
from monitor.traces import ServerSpan
from tests.report.stores import WEEK, rendered, stored

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}
request_classes:
  - {name: chat, max_context_tokens: 32768, probes: [chat], slos: [{name: a, sli: availability, objective: 99}]}
report: {timezone: UTC}
"""
T = datetime(2026, 11, 23, tzinfo=UTC).timestamp() + 3600


def _trace(k: int) -> str:
    return f"{k + 1:032x}"


def _probe(k: int) -> ProbeResult:
    # no server view of its own: its span gives it. Probes 18 and 19 retried a 429 for 2.5 s first.
    retried = k in (18, 19)
    retry = 2.5 if retried else 0.0
    ttft = retry + 0.02 + 0.5  # client retries, network 0.02, the server's TTFT 0.5
    timings = Timings(
        ttft=ttft, e2e=ttft + 1.0, retry_seconds=retry, retries=("http_429",) if retried else ()
    )
    at = T + 60 * k
    return ProbeResult(
        "ep", "chat", "chat", at, None, timings, trace_id=_trace(k), finished_at=at + ttft + 1.0
    )


def _spans(k: int) -> list[ServerSpan]:
    # vLLM: ttft 0.5 = tokenization 0.1 + queue 0.15 + prefill 0.25; probe 5 went through a gateway
    # that retried a 503 for 0.4 s (its TTFT is then 0.4 s more: network 0.02 + 0.4 retry + 0.5)
    at = T + 60 * k
    vllm = ServerSpan(_trace(k), f"{k + 1:016x}", "llm_request", at + 0.01, at + 1.5, queue=0.15, ttft=0.5,
                      prefill=0.25, decode=0.98)  # fmt: skip
    if k != 5:
        return [vllm]
    failed = ServerSpan(
        _trace(k), "a" * 16, "chat m", at - 0.39, at - 0.3, error_type="503"
    )  # to vLLM's start: 0.4
    return [failed, vllm]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Model, str]:
    probes = [_probe(k) for k in range(20)]
    probes[5] = ProbeResult("ep", "chat", "chat", T + 300, None, Timings(ttft=0.92, e2e=1.92), trace_id=_trace(5),
                            finished_at=T + 302)  # fmt: skip
    spans = [s for k in range(20) for s in _spans(k)]
    return stored(
        tmp_path_factory.mktemp("stages"),
        CONFIG,
        lambda model: [*(probe_op(model, p) for p in probes), spans_op(spans)],
    )


def test_the_breakdown_has_tokenization_and_retries(store: tuple[Model, str]) -> None:
    doc = json.loads(rendered(*store).json)
    (entry,) = doc["breakdown"]
    assert entry["tokenization_seconds"] == pytest.approx(0.1, abs=1e-6)
    assert entry["retry_seconds"] == pytest.approx(
        (2.5 + 2.5 + 0.4) / 20, abs=1e-6
    )  # the gateway's 0.4 s included
    assert entry["network_seconds"] == pytest.approx(0.02, abs=1e-6)
    assert entry["sources"]["tokenization"] == "OTLP spans"
    assert entry["sources"]["retry"] == "OTLP spans + probe timings"


def test_stages_sum_to_each_probes_ttft(store: tuple[Model, str]) -> None:
    model, url = store
    db = Store(url)
    try:
        with db.session() as s:
            samples = ProbeFacts(model, s, WEEK, Redactor()).samples()
    finally:
        db.close()
    assert len(samples) == 20
    for sample in samples:
        stages = ("retry", "network", "tokenization", "queue", "prefill")
        assert sum(sample.parts[p] for p in stages) == pytest.approx(sample.ttft, abs=1e-3)


def test_the_tail_is_the_retries(store: tuple[Model, str]) -> None:
    report = rendered(*store)
    # P95+ TTFT: the two retried probes, 3.02 s each: retry 5.0 of 6.04 s
    line = "P95+ TTFT of chat (2 requests from 3.02 s): 83% retries; at P50 and below: 48% prefill"
    assert line in report.markdown.replace("\\", "") and line in html.unescape(report.html)
    (tail,) = [e for e in json.loads(report.json)["tail"] if (e["latency"], e["band"]) == ("ttft", "p95")]
    assert tail["dominant"] == "retry" and tail["shares"]["retry"] == pytest.approx(5.0 / 6.04)
    assert tail["shares"]["tokenization"] == pytest.approx(0.2 / 6.04)
