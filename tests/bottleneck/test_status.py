"""One verdict, one computation: the service's exporter (``Jobs.assess``, what Prometheus scrapes,
the dashboard and ``M3MonTailBottleneck`` read) and ``m3mon slo status`` (the real CLI) give the
same verdict, causes and evidence for the same class at the same instant, from a real SQLite store
written through the store's own path — the issue measured the exporter saying ``unknown`` for 20
minutes while ``slo status`` said ``proxy_bound``.

The store holds what plain vLLM (no optional flag) gives: scrape intervals with vLLM's queue,
prefill, decode, TTFT and e2e histograms and its waiting gauge, per-GPU samples of a
dcgm-exporter default counter set, and probes without a server view. Their queue: the server's
queue-time P95 5 s (2 requests in 10 waited 5 s) against a TTFT objective of 2.5 s, the GPUs
busy (GPU_UTIL 100 %, GR_ENGINE_ACTIVE 0.97) with the batch at its peak: GPU-bound.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from monitor.exporter import Exporter
from monitor.model import Model
from monitor.probes.result import ProbeResult, Timings
from monitor.scrape.gpu_signals import GpuDeviceSignals, GpuSignals
from monitor.scrape.signals import EngineSignals, Histogram, Signals
from monitor.service.jobs import Jobs
from monitor.store import Store
from monitor.store.ops import gpu_op, probe_op, signals_op
from monitor.vllm_buckets import REQUEST_LATENCY, TIME_TO_FIRST_TOKEN
from tests.report.stores import stored

REPO = Path(__file__).resolve().parents[2]
T = datetime(2026, 11, 23, 1, tzinfo=UTC).timestamp() + 1800  # in 2026-W48


def _config(folder: Path) -> str:
    return f"""\
storage: {{url: "sqlite:///{folder / "report.db"}"}}
version: m3mon/v1
endpoints:
  - {{name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos: [{{name: ttft, sli: ttft, threshold: 2.5s, objective: 99}}]
"""


def _histogram(edges: tuple[float, ...], values: list[float]) -> Histogram:
    full = (*edges, float("inf"))
    return Histogram(
        full, tuple(float(sum(1 for v in values if v <= e)) for e in full), sum(values), len(values)
    )


def _interval(k: int) -> Signals:
    """15 s of the pool: 10 requests, 2 of them queued 5 s; the queue at 8 + k waiting."""
    queue = [5.0, 5.0] + [0.05] * 8
    hist = {
        "queue": _histogram(REQUEST_LATENCY, queue),
        "prefill": _histogram(REQUEST_LATENCY, [0.3] * 10),
        "decode": _histogram(REQUEST_LATENCY, [6.0] * 10),
        "ttft": _histogram(TIME_TO_FIRST_TOKEN, [q + 0.3 for q in queue]),
        "e2e": _histogram(REQUEST_LATENCY, [q + 6.3 for q in queue]),
    }
    end = T - 600 + 15 * k
    total = EngineSignals(finished={"stop": 10.0}, histograms=hist, waiting=8.0 + k, running=64.0)
    return Signals("ep", "vllm", "vllm-v1-engine", "m", end, end - 15, False, {"0": total}, total)


def _gpu(k: int) -> GpuSignals:
    end = T - 600 + 15 * k
    gauges = {"util": 1.0, "gr_engine_active": 0.97, "power_watts": 450.0}
    devices = {str(g): GpuDeviceSignals(str(g), f"GPU-{g}", gauges, {}, {}, "node-1") for g in range(8)}
    return GpuSignals("ep", "dcgm", end, end - 15, devices)


def _probe(k: int) -> ProbeResult:
    at = T - 890 + 30 * k
    t = Timings(ttft=0.5, e2e=6.5)  # no server view: no --enable-per-request-metrics
    return ProbeResult("ep", "chat", "chat", at, None, t, finished_at=at + 6.5)


def _ops(model: Model) -> list[dict[str, object]]:
    return [*(signals_op(model, "ep", _interval(k)) for k in range(1, 41)),
            *(gpu_op(_gpu(k)) for k in range(1, 41)), *(probe_op(model, _probe(k)) for k in range(29))]  # fmt: skip


def _exporter(model: Model, url: str) -> tuple[dict[str, object], dict[str, float]]:
    store, exporter = Store(url), Exporter(model)
    jobs = Jobs(model, store, exporter, clock=lambda: T)
    try:
        (verdict,) = jobs.assess()
    finally:
        asyncio.run(jobs.close())
        store.close()
    page = exporter.render().decode()
    states = {s.labels["verdict"]: s.value for f in text_string_to_metric_families(page) for s in f.samples
              if s.name == "m3mon_bottleneck_verdict"}  # fmt: skip
    return {"class": verdict.request_class, **verdict.to_json()}, states


def _status(config: Path, *args: str) -> dict[str, object]:
    cmd = [sys.executable, "-m", "monitor", "slo", "status", "-c", str(config), "--json", *args]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    (found,) = json.loads(out)["bottleneck"]
    assert isinstance(found, dict)
    return found


def test_the_exporter_and_slo_status_say_the_same(tmp_path: Path) -> None:
    model, url = stored(tmp_path, _config(tmp_path), _ops)
    served, states = _exporter(model, url)
    printed = _status(tmp_path / "monitor.yaml", "--at", str(T))
    assert served == printed
    assert (served["verdict"], served["stage"], served["sources"]) == (
        "gpu_bound",
        "queue",
        ["server histograms"],
    )
    assert [v for v, x in states.items() if x == 1.0] == ["gpu_bound"]
    assert served["hottest_gpu"]["because"] == "gr_engine_active"  # type: ignore[index]


def test_a_week_reads_the_same_rules(tmp_path: Path) -> None:
    """``--week``: the report's period verdict, every window the week; the same evidence names it."""
    _, _ = stored(tmp_path, _config(tmp_path), _ops)
    week = _status(tmp_path / "monitor.yaml", "--week", "2026-W48")
    assert (week["verdict"], week["stage"]) == ("gpu_bound", "queue")
    assert week["window_seconds"] == 7 * 86400
