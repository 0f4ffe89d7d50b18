"""The probes' GenAI client metrics arrive at a real OTLP/HTTP receiver with the conventional names.

The receiver is a plain HTTP server on 127.0.0.1 that decodes each POSTed body as an
``ExportMetricsServiceRequest`` (opentelemetry-proto, what any OTLP collector decodes). The
expected names, units and attributes are copied from the OpenTelemetry GenAI semantic
conventions (gen-ai-metrics.md, v1.37.0), not from the code under test.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from monitor.model import load_model
from monitor.probes.genai_metrics import GenAIMetrics, otlp_reader
from monitor.probes.result import Gap, ProbeResult, Timings, Usage
from tests.probes.conftest import write_config

EXPECTED_UNITS = {
    "gen_ai.client.operation.duration": "s",
    "gen_ai.client.token.usage": "{token}",
    "gen_ai.client.operation.time_to_first_chunk": "s",
    "gen_ai.client.operation.time_per_output_chunk": "s",
}
REQUIRED = {"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "server.address"}


class _Receiver(BaseHTTPRequestHandler):
    bodies: list[ExportMetricsServiceRequest] = []

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportMetricsServiceRequest()
        request.ParseFromString(raw)
        self.bodies.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[ExportMetricsServiceRequest]]]:
    bodies: list[ExportMetricsServiceRequest] = []
    handler = type("Receiver", (_Receiver,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/metrics", bodies
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _points(bodies: list[ExportMetricsServiceRequest]) -> dict[str, list[tuple[str, dict[str, Any], int]]]:
    out: dict[str, list[tuple[str, dict[str, Any], int]]] = {}
    for body in bodies:
        for rm in body.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    for p in metric.histogram.data_points:
                        attrs = {a.key: a.value.string_value or a.value.int_value for a in p.attributes}
                        out.setdefault(metric.name, []).append((metric.unit, attrs, p.count))
    return out


def test_genai_metrics_reach_an_otlp_receiver(tmp_path: Path, receiver: tuple[str, list[Any]]) -> None:
    url, bodies = receiver
    model = load_model(write_config(tmp_path / "m.yaml", "http://vllm-a.internal:8000", kinds="[chat]"))
    metrics = GenAIMetrics(model, [otlp_reader(url, 3600.0)])
    gaps = (Gap(0.3, 0.05, 1, 1), Gap(0.35, 0.12, 3, 2))
    ok = ProbeResult("sim", "small", "chat", 1.0, None, Timings(ttft=0.3, e2e=0.5, chunk_gaps=gaps),
                     Usage(prompt_tokens=40, completion_tokens=5), model="MiniMaxAI/MiniMax-M3")  # fmt: skip
    failed = ProbeResult("sim", "small", "chat", 2.0, "http_status", Timings(e2e=0.1))
    crashed = ProbeResult("sim", "small", "chat", 3.0, "monitor_error", Timings(e2e=0.1), crashed=True)
    for r in (ok, failed, crashed):
        metrics.record(r)
    metrics.shutdown()  # flushes: one export
    points = _points(bodies)
    assert {n: {u for u, _, _ in ps} for n, ps in points.items()} == {
        n: {u} for n, u in EXPECTED_UNITS.items()
    }
    for name, ps in points.items():
        for _, attrs, _ in ps:
            assert set(attrs) >= REQUIRED, (name, attrs)
            assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "vllm"
            assert attrs["gen_ai.request.model"] == "MiniMaxAI/MiniMax-M3"
            assert attrs["server.address"] == "vllm-a.internal" and attrs["server.port"] == 8000
    durations = {a.get("error.type"): n for _, a, n in points["gen_ai.client.operation.duration"]}
    assert durations == {None: 1, "http_status": 1}  # the crashed run is no operation of the service
    tokens = {a["gen_ai.token.type"]: n for _, a, n in points["gen_ai.client.token.usage"]}
    assert tokens == {"input": 1, "output": 1}
    assert sum(n for _, _, n in points["gen_ai.client.operation.time_per_output_chunk"]) == 2
