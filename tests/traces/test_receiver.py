"""``m3mon run`` receives the simulator's ``llm_request`` spans on /v1/traces and joins them to its probes.

The simulator exports through the real OTLP/HTTP protobuf exporter; ``m3mon run`` runs as a
process whose probes also export their own CLIENT spans to the same receiver (those are counted
as ignored, never stored). Stored spans must agree with the simulator's ground truth.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from monitor.model import load_model
from monitor.report.collect_probes import ProbeFacts
from monitor.report.data import Period
from monitor.report.redact import Redactor
from monitor.sim.harness import running_simulator
from monitor.store import Store
from monitor.store.tables import ProbeResultRow, ServerSpanRow
from tests.service.test_run import _free_port, _m3mon, _stop, _wait_http
from tests.support import localhttp

pytestmark = pytest.mark.timeout(120)

#: Stored numbers equal the simulator's own within this (both are float seconds of one timeline).
TOLERANCE = 0.003


def _config(tmp: Path, sim_url: str, port: int) -> Path:
    path = tmp / "monitor.yaml"
    path.write_text(
        f"""version: m3mon/v1
endpoints:
  - {{name: pool, base_url: "{sim_url}", model: MiniMaxAI/MiniMax-M3, classes: [chat-32k], scrape_interval: 5s}}
request_classes:
  - name: chat-32k
    max_context_tokens: 32768
    probes: [chat]
    probe: {{interval: 1s, jitter: 0.1s, timeout: 10s}}
    slos:
      - {{name: availability, sli: availability, objective: 99}}
storage: {{url: "sqlite:///{tmp / "m3mon.db"}", buffer_dir: "{tmp / "spool"}"}}
exporter: {{listen: "127.0.0.1:{port}"}}
"""
    )
    return path


def _counter(metrics: str, result: str) -> float:
    m = re.search(rf'^m3mon_otlp_spans_received_total{{result="{result}"}} (\S+)$', metrics, re.M)
    return float(m.group(1)) if m else 0.0


def _run_monitor(tmp: Path, sim_url: str, port: int) -> dict[str, float]:
    """Run ``m3mon run`` until spans of both kinds arrived; returns the final span counters."""
    cfg = _config(tmp, sim_url, port)
    subprocess.run(_m3mon("db", "upgrade", "-c", str(cfg)), check=True, timeout=60)
    env = {**os.environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces",
           "OTEL_BSP_SCHEDULE_DELAY": "100"}  # fmt: skip
    with (tmp / "run.log").open("ab") as out:
        proc = subprocess.Popen(_m3mon("run", "-c", str(cfg), "--no-report"), stdout=out,
                                stderr=subprocess.STDOUT, env=env)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(base + "/healthz", time.monotonic() + 20)
        garbage = localhttp.post(base + "/v1/traces", content=b"not a protobuf",
                             headers={"content-type": "application/x-protobuf"}, timeout=5)  # fmt: skip
        assert garbage.status_code == 400, garbage.text
        wrong = localhttp.post(
            base + "/v1/traces", content=b"x", headers={"content-type": "text/plain"}, timeout=5
        )
        assert wrong.status_code == 415
        deadline = time.monotonic() + 40
        counts: dict[str, float] = {}
        while time.monotonic() < deadline:
            metrics = localhttp.get(base + "/metrics", timeout=5).text
            counts = {r: _counter(metrics, r) for r in ("stored", "ignored", "rejected")}
            if counts["stored"] >= 4 and counts["ignored"] >= 4:
                break
            time.sleep(0.3)
        assert counts["stored"] >= 4 and counts["ignored"] >= 4, (
            counts,
            (tmp / "run.log").read_text()[-3000:],
        )
    finally:
        assert _stop(proc) == 0, (tmp / "run.log").read_text()[-3000:]
    return counts


def test_spans_from_the_simulator_join_the_probes_and_match_the_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _free_port()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # the simulator's batch exporter, in this process
    with running_simulator(decode_itl=0.003, answer_tokens=(8, 16), seed=11,
                           otlp_traces_endpoint=f"http://127.0.0.1:{port}/v1/traces") as sim:  # fmt: skip
        counts = _run_monitor(tmp_path, sim.base_url, port)
        truth = {r["trace_id"]: r for r in sim.truth()["requests"] if r["trace_id"]}
    assert counts["rejected"] == 2
    store = Store(f"sqlite:///{tmp_path / 'm3mon.db'}")
    try:
        with store.session() as s:
            spans = list(s.scalars(select(ServerSpanRow)))
            probes = {p.trace_id: p for p in s.scalars(select(ProbeResultRow)) if p.ok}
            model = load_model(tmp_path / "monitor.yaml")
            now = datetime.now(UTC)
            week = Period("now", now - timedelta(hours=1), now + timedelta(hours=1))
            (brk,) = ProbeFacts(model, s, week, Redactor()).breakdown()
    finally:
        store.close()
    assert {x.name for x in spans} == {"llm_request"} and {x.service_name for x in spans} == {"vllm-server"}
    assert len(spans) >= 4 and len(spans) <= counts["stored"]
    joined = [(x, probes[x.trace_id]) for x in spans if x.trace_id in probes]
    assert len(joined) >= 0.8 * len(spans), (len(joined), len(spans))
    for span, probe in joined:
        assert probe.server_queue is None  # per-request metrics are off: only the span has the server view
        t = truth[span.trace_id]
        assert span.queue == pytest.approx(t["last_scheduled"]["mono"] - t["queued"]["mono"], abs=TOLERANCE)
        assert span.prefill == pytest.approx(
            t["first_token"]["mono"] - t["last_scheduled"]["mono"], abs=TOLERANCE
        )
        assert span.decode == pytest.approx(
            t["token_times"]["mono"][-1] - t["first_token"]["mono"], abs=TOLERANCE
        )
        assert span.start_time == pytest.approx(t["arrival"]["wall"], abs=TOLERANCE)
        assert (
            span.completion_tokens == t["completion_tokens"] and span.prefill is not None and span.prefill > 0
        )
        assert probe.ttft is not None and span.ttft is not None and -TOLERANCE <= probe.ttft - span.ttft < 0.5
    parts = dict(brk.parts)
    assert brk.request_class == "chat-32k"
    for name in ("queue", "prefill", "decode", "network"):
        assert parts[name] is not None and parts[name] >= -TOLERANCE, (name, parts)
    mean_decode = sum(s.decode or 0.0 for s, _ in joined) / len(joined)
    assert parts["decode"] == pytest.approx(mean_decode, rel=0.5)
