"""Where real traffic's tail goes (issue 25: "per request, for probes and for real traffic
(spans)"): hand-built server spans stored through the store's write path, the shares counted by hand
from docs/bottleneck.md's definition (nearest-rank P95/P50 bands, a stage's seconds over the
latency's seconds in the band), in every format."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.probes.result import ProbeResult, Timings
from monitor.store.ops import probe_op, spans_op
from monitor.traces.span import ServerSpan
from tests.report.stores import rendered, stored

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}
  - {name: ep2, base_url: "http://127.0.0.1:10", backend: vllm, model: m, classes: [few]}
request_classes:
  - {name: chat, max_context_tokens: 32768, probes: [chat], slos: [{name: a, sli: availability, objective: 99}]}
  - {name: few, max_context_tokens: 32768, probes: [chat], slos: [{name: a, sli: availability, objective: 99}]}
report: {timezone: UTC}
"""
T = datetime(2026, 11, 24, tzinfo=UTC).timestamp()


def _vllm(k: int, queue: float, service: str = "ep", trace: str | None = None, **extra: object) -> ServerSpan:
    """vLLM's llm_request span: tokenization 0.05 s, ``queue``, prefill 0.4 s, decode 1.0 s, 0.01 s after."""
    start = T + 600 * k
    ttft = 0.05 + queue + 0.4
    return ServerSpan(trace or f"{k:032x}", f"{k:016x}", "llm_request", start, start + ttft + 1.01,
                      queue=queue, ttft=ttft, prefill=0.4, decode=1.0, e2e=ttft + 1.0, prompt_tokens=100,
                      completion_tokens=50, service_name=service, **extra)  # type: ignore[arg-type]  # fmt: skip


def _spans() -> list[ServerSpan]:
    spans = [_vllm(k, 2.5 if k in (3, 11) else 0.05) for k in range(20)]  # 20 requests, two queued 2.5 s
    spans.append(_vllm(40, 9.0, service="unknown_service:python"))  # a span no endpoint owns: no class
    spans.append(_vllm(41, 9.0, trace="f" * 32))  # a probe's own request: the probes' population
    return spans


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], str, str]:
    probe = ProbeResult("ep", "chat", "chat", T, None, Timings(ttft=9.5, e2e=10.5), trace_id="f" * 32)
    model, url = stored(tmp_path_factory.mktemp("traffic"), CONFIG,
                        lambda m: [probe_op(m, probe), spans_op(_spans())])  # fmt: skip
    r = rendered(model, url)
    return json.loads(r.json), r.markdown.replace("\\", ""), html.unescape(r.html)


def test_the_tail_of_real_traffic_is_counted_by_hand(report: tuple[dict[str, object], str, str]) -> None:
    doc, _, _ = report
    shares = {(t["class"], t["latency"], t["band"]): t for t in doc["traffic_tail"]}  # type: ignore[attr-defined]
    assert {c for c, _, _ in shares} == {"chat"}  # "few" has no real request; the unowned span none
    tail = shares[("chat", "ttft", "p95")]
    # TTFTs: 18 x 0.5 s, 2 x 2.95 s; nearest-rank P95 = the 19th = 2.95 s: the two slow requests
    assert (tail["requests"], tail["bound_seconds"]) == (2, pytest.approx(2.95))
    assert tail["shares"] == pytest.approx({"retry": 0.0, "network": 0.0, "tokenization": 0.05 / 2.95,
                                            "queue": 2.5 / 2.95, "prefill": 0.4 / 2.95, "other": 0.0})  # fmt: skip
    typical = shares[("chat", "ttft", "p50")]  # the 18 requests at 0.5 s: 80 % prefill
    assert typical["requests"] == 18 and typical["dominant"] == "prefill"
    assert typical["shares"]["prefill"] == pytest.approx(0.8)
    e2e = shares[("chat", "e2e", "p95")]  # e2e = the span: 3.96 s slow, 1.51 s typical; 0.01 s other
    assert e2e["requests"] == 2 and e2e["bound_seconds"] == pytest.approx(3.96)
    assert e2e["shares"]["queue"] == pytest.approx(2.5 / 3.96) and e2e["shares"]["decode"] == pytest.approx(
        1 / 3.96
    )
    assert e2e["shares"]["other"] == pytest.approx(0.01 / 3.96, abs=1e-6)  # Unix-second stamps: ~0.2 us


def test_every_format_says_it_apart_from_the_probes(report: tuple[dict[str, object], str, str]) -> None:
    _, md, page = report
    line = (
        "Real traffic: P95+ TTFT of chat (2 requests from 2.95 s): 85% queue; at P50 and below: 80% prefill"
    )
    assert line in md and line in page
    assert "chat (real traffic)" in md and "chat (real traffic)" in page
    assert "P95+ TTFT of chat: not attributed (1 probe request(s)" in md  # the probe is not traffic


def test_a_busy_week_is_read_as_a_bounded_uniform_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most MAX_TRACES traces are read — the smallest trace ids, the same ones every run."""
    from monitor.report import collect_traffic

    monkeypatch.setattr(collect_traffic, "MAX_TRACES", 20)
    spans = [_vllm(k, 0.05, trace=f"{(k * 7919) % 97:032x}") for k in range(30)]
    model, url = stored(tmp_path, CONFIG, lambda m: [spans_op(spans)])
    doc = json.loads(rendered(model, url).json)
    typical = next(t for t in doc["traffic_tail"] if (t["latency"], t["band"]) == ("ttft", "p50"))
    assert typical["requests"] == 20
