"""The breakdown takes the server view from stored vLLM spans when the probes did not record one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.model import load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report.collect_probes import ProbeFacts
from monitor.report.data import Period
from monitor.report.redact import Redactor
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op, spans_op
from monitor.traces import ServerSpan
from tests.report import week as W


def _span(trace: str, n: int, at: float, queue: float, ttft: float) -> ServerSpan:
    return ServerSpan(trace, f"{n:016x}", "llm_request", at, at + 3, queue=queue, ttft=ttft,
                      prefill=ttft - queue, decode=2.0)  # fmt: skip


def test_spans_fill_in_the_server_view_probes_lack(tmp_path: Path) -> None:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(W.CONFIG)
    model = load_model(cfg)
    url = f"sqlite:///{tmp_path / 'spans.db'}"
    upgrade(url)
    at = W.START + 3600
    bare = Timings(ttft=0.5, e2e=3.0)  # no server view: the spans carry it
    probes = [
        ProbeResult("ep-a", "chat", "chat", at + k, None, bare, trace_id=f"{k + 1:032x}") for k in range(2)
    ]
    own = Timings(ttft=0.4, e2e=3.0, server_queue=0.1, server_prefill=0.2, server_decode=1.0, network=0.1)
    probes.append(ProbeResult("ep-a", "chat", "chat", at + 5, None, own, trace_id=f"{3:032x}"))
    probes.append(ProbeResult("ep-a", "chat", "chat", at + 6, None, bare, trace_id=f"{4:032x}"))  # no span
    spans = [
        _span(f"{1:032x}", 1, at, queue=0.1, ttft=0.4),
        _span(f"{1:032x}", 2, at + 2, queue=9.0, ttft=9.0),  # a later request of the same trace: not used
        _span(f"{2:032x}", 3, at + 1, queue=0.3, ttft=0.45),
        _span(
            f"{3:032x}", 4, at + 5, queue=7.0, ttft=7.0
        ),  # the probe has its own view: the span is not used
    ]
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints), *(probe_op(model, p) for p in probes), spans_op(spans)])
        store.apply([spans_op(spans)])  # replayed: idempotent
        week = Period(W.WEEK, datetime.fromtimestamp(W.START, UTC), datetime.fromtimestamp(W.END, UTC))
        with store.session() as s:
            brk = {b.request_class: b for b in ProbeFacts(model, s, week, Redactor()).breakdown()}
    finally:
        store.close()
    chat = brk["chat"]
    parts = dict(chat.parts)
    assert chat.count == 4
    assert parts["queue"] == pytest.approx((0.1 + 0.3 + 0.1) / 3)
    assert parts["prefill"] == pytest.approx((0.3 + 0.15 + 0.2) / 3)
    assert parts["decode"] == pytest.approx((2.0 + 2.0 + 1.0) / 3)
    assert parts["network"] == pytest.approx((0.1 + 0.05 + 0.1) / 3)
    assert dict(brk["agent"].parts)["queue"] is None
    # two probes' server view came from spans, one from its own per-request metrics: both are named
    assert chat.source("queue") == chat.source("network") == "OTLP spans + per-request metrics"
    assert chat.source("tool_turnaround") is None
