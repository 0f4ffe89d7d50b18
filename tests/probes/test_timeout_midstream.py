"""A probe cut off by its own timeout in the middle of a stream (the monitor is the client that gave
up): counted once, as the bad event docs/slo-events.md defines, and its trace kept.

Against the simulator, whose stream outlasts the probe's timeout: the run is a ``timeout`` (an
*unanswered* category), so it is a bad event of availability and of goodput and no event of any
latency SLI, though its TTFT was measured (kept with the result for diagnosis). Its trace id is
stored, so a span the server sends for the request the monitor abandoned belongs to the probe's
trace and is left out of real traffic. The simulator, as vLLM 0.32 does, aborts the request when
the client goes and exports no span for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult
from monitor.probes.runner import plan_round, run_probe
from monitor.sim.harness import SimHandle, running_simulator
from monitor.slo.slices import slices_from_probe
from tests.probes.conftest import SIM_SETTINGS, write_config

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 0.6
#: Decode steps of 5 s: the first token comes from the prefill step, the next 5 s later, so the
#: probe's timeout cuts the stream after its first token.
SLOW = {**SIM_SETTINGS, "decode_itl": 5.0}


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture(scope="module")
def slow_sim(spans: InMemorySpanExporter) -> Iterator[SimHandle]:
    with running_simulator(**SLOW, span_exporter=spans) as handle:  # type: ignore[arg-type]
        yield handle


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory, slow_sim: SimHandle) -> Model:
    path = tmp_path_factory.mktemp("midstream") / "monitor.yaml"
    path.write_text(write_config(path, slow_sim.base_url, timeout="1s", kinds="[chat]").read_text().replace(
        "      - {name: ttft, sli: ttft, threshold: 2.5s, objective: 95, source: probes}",
        "      - {name: ttft, sli: ttft, threshold: 2.5s, objective: 95, source: probes}\n"
        "      - {name: goodput, sli: goodput, objective: 95, source: probes}",
    ))  # fmt: skip
    return load_model(path)


def _timed_out_run(model: Model) -> ProbeResult:
    (p,) = plan_round(model, kinds=["chat"])
    short = dataclasses.replace(p, spec=dataclasses.replace(p.spec, plan=dataclasses.replace(p.spec.plan,
                                                                                             timeout=TIMEOUT)))  # fmt: skip

    async def go() -> ProbeResult:
        async with httpx.AsyncClient() as client:
            return await run_probe(short, client)

    return asyncio.run(go())


def test_a_probe_cut_mid_stream_is_one_bad_event_with_its_trace(
    model: Model, slow_sim: SimHandle, spans: InMemorySpanExporter
) -> None:
    result = _timed_out_run(model)
    assert result.reason == "timeout", (result.detail, result.timings, result.usage, result.log)
    assert result.trace_id is not None  # the abandoned request is known as the probe's
    ttft = result.timings.ttft
    assert ttft is not None and 0 < ttft < TIMEOUT  # a first token had arrived: cut mid-stream
    assert "first token after" in result.detail
    events = {s.slo_id.split("/")[-1]: (s.good, s.total) for s in slices_from_probe(model, result)}
    # availability and goodput: one bad event each; TTFT: no event (an unanswered run has none)
    assert events == {"availability": (0.0, 1.0), "goodput": (0.0, 1.0)}

    def server_view() -> dict[str, object]:
        found = [r for r in slow_sim.truth()["requests"] if r["trace_id"] == result.trace_id]
        return found[0] if found and found[0]["finish_reason"] is not None else {}

    deadline = time.monotonic() + 10
    while not (request := server_view()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert request.get("finish_reason") == "abort", request  # the server saw the client go
    slow_sim.call(lambda: slow_sim.sim.tracer.provider.force_flush() if slow_sim.sim.tracer else True)
    assert not [s for s in spans.get_finished_spans() if f"{s.context.trace_id:032x}" == result.trace_id]
