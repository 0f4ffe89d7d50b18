"""The metric source bench/rules_weight.py's Prometheus scrapes: a monitor page and vLLM pages.

``/monitor`` is the monitor's real exporter (:class:`monitor.probes.metrics.ProbeMetrics` for the
model, every series created at start) after observing one probe result per probed target at each
scrape, every tenth a timeout and every twentieth a wrong answer. ``/vllm/<endpoint>`` is a vLLM
page (``request_success_total`` by finish reason, and the TTFT, ITL, e2e and queue-time
histograms with vLLM's default edges) whose counters rise by 10 requests a second, 2 % of them
errors and 5 % slower than every SLO threshold. Served on a free loopback port in a thread.
"""

from __future__ import annotations

import contextlib
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, generate_latest

from monitor import conventions as cv
from monitor import vllm_buckets as vb
from monitor.model import Model
from monitor.probes.metrics import ProbeMetrics, targets
from monitor.probes.result import ProbeResult, Timings, Usage
from monitor.slo.probe_goodput import judge

RATE = 10.0
HISTOGRAMS = ((cv.VLLM_TTFT, vb.TIME_TO_FIRST_TOKEN, 0.2), (cv.VLLM_ITL, vb.INTER_TOKEN_LATENCY, 0.02),
              (cv.VLLM_E2E, vb.REQUEST_LATENCY, 3.0), (cv.VLLM_QUEUE, vb.REQUEST_LATENCY, 0.3))  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _result(endpoint: str, klass: str, kind: str, i: int, now: float) -> ProbeResult:
    if i % 10 == 0:
        return ProbeResult(endpoint, klass, kind, now - 60, "timeout", detail="bench", status_code=None)
    timings = Timings(ttft=0.4, ttft_answer=0.4, itl_samples=(0.02,) * 8, tpot=0.02, e2e=2.0)
    reason = "wrong_answer" if i % 20 == 5 else None
    return ProbeResult(endpoint, klass, kind, now - 2, reason, timings=timings,
                       usage=Usage(prompt_tokens=12, completion_tokens=9), model=cv.M3_MODEL_ID,
                       finish_reason="stop", status_code=200, detail="bench" if reason else "")  # fmt: skip


def _le(edge: float) -> str:
    return "+Inf" if math.isinf(edge) else repr(float(edge))


def vllm_page(elapsed: float) -> str:
    n = math.floor(RATE * elapsed)
    bad, slow = n // 50, n // 20
    base = f'engine="0",model_name="{cv.M3_MODEL_ID}"'
    lines = [f"# TYPE {cv.VLLM_REQUEST_SUCCESS} counter"]
    for reason, count in (("stop", n - bad), ("error", bad), ("abort", 0)):
        lines.append(f'{cv.VLLM_REQUEST_SUCCESS}{{{base},finished_reason="{reason}"}} {float(count)!r}')
    for name, edges, typical in HISTOGRAMS:
        lines.append(f"# TYPE {name} histogram")
        for edge in (*edges, math.inf):
            below = (n - slow if typical <= edge else 0) + (slow if math.isinf(edge) else 0)
            lines.append(f'{name}_bucket{{{base},le="{_le(edge)}"}} {float(below)!r}')
        lines.append(f"{name}_count{{{base}}} {float(n)!r}")
        lines.append(f"{name}_sum{{{base}}} {n * typical!r}")
    return "\n".join(lines) + "\n"


class Source:
    """Both kinds of page, on ``address``; :meth:`serve` in a thread, :meth:`shutdown` to stop."""

    def __init__(self, model: Model) -> None:
        self.registry = CollectorRegistry()
        self.metrics = ProbeMetrics.for_model(self.registry, model, judge(model))
        self.targets = targets(model)
        self.endpoints = [e.name for e in model.endpoints]
        self.started = time.time()
        self.lock = threading.Lock()
        self.scrapes = 0
        source = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = source.page(self.path).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError):  # Prometheus gave up on a slow scrape
                    self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"

    def page(self, path: str) -> str:
        if path.startswith("/vllm/"):
            return vllm_page(time.time() - self.started)
        with self.lock:
            self.scrapes += 1
            now = time.time()
            for i, (endpoint, klass, kind) in enumerate(self.targets):
                self.metrics.observe(_result(endpoint, klass, kind, i + self.scrapes, now))
            return generate_latest(self.registry).decode()

    def serve(self) -> None:
        self.server.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        self.server.shutdown()
        self.server.server_close()
