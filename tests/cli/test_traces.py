"""``m3mon traces``: from an SLO to the requests behind it, through the real CLI on a real store.

The oracle is the world the test writes, judged by docs/slo-events.md alone: availability's bad
events are the unanswered runs, a latency SLI's are the answered runs above the threshold, a run of
the monitor's own fault is no event of any SLI, runs that completed outside the window are not in
it. Bad requests come first, then the slowest.
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.model import load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op, spans_op
from monitor.traces.span import ServerSpan

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: availability, sli: availability, objective: 99}
      - {name: ttft-p95, sli: ttft, threshold: 1s, objective: 95}
      - {name: server-ttft, sli: ttft, threshold: 1s, objective: 95, source: server}
      - {name: goodput, sli: goodput, objective: 95, source: traffic}
storage: {url: "sqlite:///t.db"}
alerting: {trace_url: "http://jaeger:16686/trace/{trace_id}"}
"""
END = 1_795_000_000.0


def _world(seed: int) -> list[ProbeResult]:
    rng = random.Random(seed)
    runs = []
    for k in range(40):
        at = END - 850 + 20 * k
        reason = rng.choice([None] * 8 + ["timeout", "wrong_answer", "monitor_error"])
        ttft = None if reason in ("timeout", "monitor_error") else rng.choice([0.2, 0.5, 0.9, 1.2, 2.5, 4.0])
        e2e = None if ttft is None else ttft + 1.0
        done = at + (e2e if e2e is not None else 30.0)
        runs.append(ProbeResult("ep", "chat", "chat", at, reason, Timings(ttft=ttft, e2e=e2e),
                                trace_id=f"{k:032x}", finished_at=done))  # fmt: skip
    # completed after the window's end: in no listing
    runs.append(
        ProbeResult(
            "ep", "chat", "chat", END - 5, "timeout", Timings(), trace_id="f" * 32, finished_at=END + 25
        )
    )
    return runs


def _spans(runs: list[ProbeResult]) -> list[ServerSpan]:
    out = []
    for r in runs:
        if r.timings.ttft is not None and r.trace_id:
            t = r.timings.ttft * 0.9  # the server's own view of the request, a little shorter
            out.append(ServerSpan(r.trace_id, "1" * 16, "llm_request", r.started_at, r.started_at + t + 0.5,
                                  queue=0.1 * t, ttft=t, prefill=0.8 * t, decode=0.5, e2e=t + 0.5,
                                  prompt_tokens=100, completion_tokens=20, service_name="ep"))  # fmt: skip
    return out


#: real traffic (no probe's trace): fast, slow (TTFT over the class's 1 s limit), aborted by its client
TRAFFIC = [
    ServerSpan("a" * 32, "2" * 16, "llm_request", END - 60, END - 59, queue=0.01, ttft=0.2, prefill=0.1,
               decode=0.8, e2e=1.0, prompt_tokens=50, completion_tokens=20, service_name="ep"),
    ServerSpan("b" * 32, "2" * 16, "llm_request", END - 50, END - 46, queue=2.5, ttft=3.0, prefill=0.4,
               decode=1.0, e2e=4.0, prompt_tokens=50, completion_tokens=20, service_name="ep"),
    ServerSpan("c" * 32, "2" * 16, "llm_request", END - 40, END - 39.5, queue=0.01, ttft=0.2, prefill=0.1,
               decode=0.3, e2e=0.5, prompt_tokens=50, completion_tokens=5, service_name="ep",
               finish_reason="abort"),
]  # fmt: skip


@pytest.fixture()
def world(tmp_path: Path) -> tuple[Path, list[ProbeResult]]:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(CONFIG)
    model = load_model(cfg)
    upgrade(model.storage.url)
    runs = _world(7)
    store = Store(model.storage.url)
    try:
        store.apply(
            [
                endpoints_op(model.endpoints),
                *(probe_op(model, r) for r in runs),
                spans_op(_spans(runs) + TRAFFIC),
            ]
        )
    finally:
        store.close()
    return cfg, runs


def _listed(
    cfg: Path, slo: str, capsys: pytest.CaptureFixture[str], limit: int = 100
) -> list[dict[str, object]]:
    code = main(["traces", "-c", str(cfg), "--slo", slo, "--at", str(END), "--limit", str(limit), "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    requests: list[dict[str, object]] = doc["requests"]
    return requests


def _in_window(runs: list[ProbeResult]) -> list[ProbeResult]:
    return [r for r in runs if END - 900 < (r.finished_at or 0) <= END and r.reason != "monitor_error"]


def test_availability_lists_the_unanswered_first(
    world: tuple[Path, list[ProbeResult]], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, runs = world
    listed = _listed(cfg, "chat/availability", capsys)
    events = _in_window(runs)
    unanswered = {r.trace_id for r in events if r.reason == "timeout"}
    assert len(listed) == len(events)  # every event once, the monitor's own fault and late runs never
    assert {x["trace_id"] for x in listed if x["bad"]} == unanswered
    assert all(x["bad"] for x in listed[: len(unanswered)])
    assert all(x["trace_url"] == f"http://jaeger:16686/trace/{x['trace_id']}" for x in listed)


def test_latency_lists_the_answered_above_the_threshold_slowest_first(
    world: tuple[Path, list[ProbeResult]], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, runs = world
    listed = _listed(cfg, "chat/ttft-p95", capsys, limit=5)
    answered = [r for r in _in_window(runs) if r.reason != "timeout"]
    slow = sorted((r for r in answered if (r.timings.ttft or 0) > 1.0), key=lambda r: -(r.timings.ttft or 0))
    assert len(slow) >= 5, "the seed gives enough slow runs for the limit"
    assert [x["value"] for x in listed] == [r.timings.ttft for r in slow[:5]]
    assert all(x["bad"] for x in listed)
    stages = listed[0]["stages"]
    assert isinstance(stages, dict) and {"queue", "prefill", "decode"} <= stages.keys()  # from its span


def test_server_sourced_reads_the_spans(
    world: tuple[Path, list[ProbeResult]], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, runs = world
    listed = _listed(cfg, "chat/server-ttft", capsys)
    spans = [s for s in _spans(runs) + TRAFFIC if END - 900 < s.end <= END]
    assert sorted(x["value"] for x in listed) == sorted(s.ttft for s in spans)
    assert {x["trace_id"] for x in listed if x["bad"]} == {s.trace_id for s in spans if (s.ttft or 0) > 1.0}


def test_traffic_goodput_lists_real_requests_only_bad_ones_first(
    world: tuple[Path, list[ProbeResult]], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, _ = world
    listed = _listed(cfg, "chat/goodput", capsys)
    # docs/slo-events.md: real traffic is in no probe's trace; a failed (aborted) span is bad; a span
    # over a latency limit of its class (TTFT 3 s > 1 s) is bad
    assert {x["trace_id"] for x in listed} == {"a" * 32, "b" * 32, "c" * 32}
    assert {x["trace_id"] for x in listed if x["bad"]} == {"b" * 32, "c" * 32}
    assert [x["bad"] for x in listed] == [True, True, False]
    assert {x["trace_id"]: x["outcome"] for x in listed}["c" * 32] == "aborted"


def test_an_unknown_slo_is_one_line_exit_2(
    world: tuple[Path, list[ProbeResult]], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, _ = world
    assert main(["traces", "-c", str(cfg), "--slo", "chat/nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown SLO 'chat/nope'" in err[0] and "chat/ttft-p95" in err[0]


TENANT_CONFIG = CONFIG.replace(
    "      - {name: goodput, sli: goodput, objective: 95, source: traffic}",
    "      - {name: goodput, sli: goodput, objective: 95, source: traffic, tenants: [acme, other]}",
).replace("storage:", "traffic: {tenants: [acme]}\nstorage:")
#: the tenant label each real request was counted under (as the service stores it with the span)
LABELS = {"a" * 32: "acme", "b" * 32: "other", "c" * 32: "acme"}


def test_a_tenants_goodput_lists_that_tenants_requests_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(TENANT_CONFIG)
    model = load_model(cfg)
    upgrade(model.storage.url)
    store = Store(model.storage.url)
    try:
        labelled = [dataclasses.replace(s, tenant_label=LABELS[s.trace_id]) for s in TRAFFIC]
        store.apply([endpoints_op(model.endpoints), spans_op(labelled)])
    finally:
        store.close()
    for tenant in ("acme", "other"):
        listed = _listed(cfg, f"chat/goodput.{tenant}", capsys)
        assert {x["trace_id"] for x in listed} == {t for t, label in LABELS.items() if label == tenant}
