"""``m3mon run`` pushes the GenAI client metrics it recorded since the last OTLP export when it stops.

A real ``m3mon run`` process (config file → Exporter → the SDK's OTLP/HTTP exporter) probes the
simulator with ``exporter.otlp_metrics_interval: 1h``, so no periodic export happens while the
test runs: the receiver (a 127.0.0.1 server decoding ``ExportMetricsServiceRequest`` with
opentelemetry-proto) stays empty until SIGTERM, and everything it gets comes from the flush on
stop. Names and attributes are the semantic conventions' (v1.37.0), copied from the spec.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.sim.harness import SimHandle, running_simulator
from tests.llm_slis.test_genai_otlp import EXPECTED_UNITS, REQUIRED, _points
from tests.llm_slis.test_genai_otlp import receiver as receiver  # the fixture
from tests.service.live import config_doc, free_port, running_monitor, wait_until

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def sim() -> Iterator[SimHandle]:
    with running_simulator(decode_itl=0.002, jitter=0.0, answer_tokens=(6, 10), seed=3) as handle:
        yield handle


def test_metrics_recorded_before_sigterm_reach_the_otlp_receiver(
    tmp_path: Path, sim: SimHandle, receiver: tuple[str, list[Any]]
) -> None:
    url, bodies = receiver
    port = free_port()
    doc = config_doc(tmp_path, port, otlp_metrics_endpoint=url, otlp_metrics_interval="1h")
    doc["endpoints"][0]["base_url"] = sim.base_url
    with running_monitor(tmp_path, doc) as monitor:
        ok = wait_until(lambda: monitor.metric("m3mon_probe_total", result="success") >= 1, 30,
                        "one successful chat probe")  # fmt: skip
        assert ok
        gaps = monitor.metric("m3mon_probe_chunk_gap_seconds_count")  # the Prometheus twin
        assert bodies == [], "exported before the stop: the interval is 1h"
    # running_monitor sent SIGTERM and asserted exit code 0
    points = _points(bodies)
    assert set(points) == set(EXPECTED_UNITS), sorted(points)
    for name, ps in points.items():
        assert {unit for unit, _, _ in ps} == {EXPECTED_UNITS[name]}
        for _, attrs, _ in ps:
            assert set(attrs) >= REQUIRED, (name, attrs)
            assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "vllm"
            assert attrs["gen_ai.request.model"] == "MiniMaxAI/MiniMax-M3"
            assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == sim.port
    assert sum(n for _, a, n in points["gen_ai.client.operation.duration"] if "error.type" not in a) >= 1
    assert sum(n for _, _, n in points["gen_ai.client.operation.time_to_first_chunk"]) >= 1
    # one probe run (interval 1h): its chunk gaps, as many as the Prometheus exporter counted
    assert gaps >= 1
    assert sum(n for _, _, n in points["gen_ai.client.operation.time_per_output_chunk"]) == gaps
