"""Requests whose client gave up mid-stream, on a real vLLM: what each side counts (docs/slo-events.md,
"Requests the client gave up on").

Two clients disconnect after their first token, while vLLM is still generating (``ignore_eos`` and
1,900 output tokens: seconds of decoding on this tiny model):

* the monitor's own probe, cut off by its timeout (the real runner, exchange and tracer; only the
  request's length is forced): a ``timeout``, so one bad event of probe availability and of
  goodput and no latency event, with its trace id and the TTFT it measured kept;
* a real-traffic client that closes its connection.

vLLM 0.32 aborts both (``AsyncLLM.abort``) and reports neither: no ``llm_request`` span (its
``do_tracing`` runs only for requests that finish in the engine) and no
``request_success_total{finished_reason="abort"}`` increment (vllm-project/vllm#31503). So the
probe's failure is counted once, by the probe SLIs, and the real client's abort is seen by no
server-side figure: what the docs state. A request sent afterwards bounds the wait: its span is
stored, so any span of the aborted two would have been exported before it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import secrets
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult
from monitor.probes.runner import plan_round, run_probe
from monitor.probes.wire import StampingTransport
from monitor.slo.slices import slices_from_probe
from monitor.store.tables import ServerSpanRow
from tests.e2e.stack import wait_until
from tests.real_vllm.conftest import ENDPOINT, Real, wait_for_probe_round
from tests.real_vllm.stack import SERVED

#: The cut must fall between the first token and the last of a real server whose speed a busy
#: machine changes from one request to the next: beside the quick tier's other tests the first
#: token came after the timeout (twice in CI), and a longer timeout let the answer finish first.
#: It runs alone, after the other tiers: .ci/run sets M3MON_REAL_ABORTS=1 for one
#: `make test-real-vllm` of this test (with the overload test, one after the other).
ALONE = os.environ.get("M3MON_REAL_ABORTS", "") not in ("", "0")
pytestmark = [
    pytest.mark.skipif(not ALONE, reason="set M3MON_REAL_ABORTS=1: timing needs a machine to itself")
]

#: Output tokens asked for (with ``ignore_eos``): longer than any timeout below at this model's speed.
LONG = 1900
#: The probe's timeout: well after a first token (10-20 ms quiet, ~0.3 s at load 10), well before
#: 1,900 tokens (700-900 tokens/s quiet).
PROBE_TIMEOUT = 1.0


class _LongAnswers(httpx.AsyncBaseTransport):
    """The probe's chat requests, unchanged except ``ignore_eos`` (random weights may end early)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/chat/completions"):
            body = {**json.loads(request.content), "ignore_eos": True}
            headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
            request = httpx.Request("POST", request.url, headers=headers, content=json.dumps(body).encode(),
                                    extensions=request.extensions)  # fmt: skip
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _model(real: Real, tmp: Path) -> Model:
    """The tier's configuration with goodput and TTFT SLOs on the probes too."""
    doc = yaml.safe_load(real.config.read_text())
    (rc,) = doc["request_classes"]
    rc["slos"] += [{"name": "goodput", "sli": "goodput", "objective": 99.0},
                   {"name": "ttft", "sli": "ttft", "threshold": "5s", "objective": 99.0}]  # fmt: skip
    path = tmp / "aborts.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_model(path)


def _probe_cut_mid_stream(model: Model) -> ProbeResult:
    (p,) = [p for p in plan_round(model, kinds=["chat"]) if p.target.endpoint.name == ENDPOINT]
    plan = dataclasses.replace(p.spec.plan, timeout=PROBE_TIMEOUT)
    cut = dataclasses.replace(p, spec=dataclasses.replace(p.spec, plan=plan, max_tokens=LONG))

    async def go() -> ProbeResult:
        transport = _LongAnswers(StampingTransport(httpx.Limits(), True))
        async with httpx.AsyncClient(transport=transport) as client:
            return await run_probe(cut, client)

    return asyncio.run(go())


def _client_disconnects(real: Real, trace_id: str) -> None:
    body = {"model": SERVED, "max_tokens": LONG, "ignore_eos": True, "stream": True,
            "messages": [{"role": "user", "content": "Tell me a long story."}]}  # fmt: skip
    headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"}
    url = f"{real.server.base_url}/v1/chat/completions"
    with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: {") and _content(json.loads(line[6:])):
                break  # a first token arrived: hang up mid-stream
        else:
            raise AssertionError("the stream ended before its first token")


def _content(chunk: dict[str, object]) -> bool:
    choices = chunk.get("choices")
    delta = choices[0].get("delta", {}) if isinstance(choices, list) and choices else {}
    return bool(isinstance(delta, dict) and delta.get("content"))


def _finished(real: Real) -> dict[str, float]:
    text = httpx.get(f"{real.server.base_url}/metrics", timeout=10).text
    return {s.labels["finished_reason"]: s.value for f in text_string_to_metric_families(text)
            for s in f.samples if s.name == "vllm:request_success_total"}  # fmt: skip


def test_a_client_that_gives_up_mid_stream_is_counted_once(real: Real, tmp_path: Path) -> None:
    wait_for_probe_round(real)  # the service's own round is over: only this test's requests now
    model = _model(real, tmp_path)
    before = _finished(real)

    probe = _probe_cut_mid_stream(model)
    assert probe.reason == "timeout", (probe.reason, probe.detail)
    assert probe.trace_id is not None
    assert probe.timings.ttft is not None and 0 < probe.timings.ttft < PROBE_TIMEOUT, probe.timings
    events = {s.slo_id.split("/")[-1]: (s.good, s.total) for s in slices_from_probe(model, probe)}
    assert events == {"availability": (0.0, 1.0), "goodput": (0.0, 1.0)}  # no TTFT event

    client_trace = secrets.token_hex(16)
    _client_disconnects(real, client_trace)

    after_trace = secrets.token_hex(16)  # a request that finishes: its span bounds the wait
    short = {"model": SERVED, "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]}
    r = httpx.post(f"{real.server.base_url}/v1/chat/completions", json=short, timeout=60,
                   headers={"traceparent": f"00-{after_trace}-{secrets.token_hex(8)}-01"})  # fmt: skip
    assert r.status_code == 200, r.text
    wait_until(lambda: real.rows(ServerSpanRow, ServerSpanRow.trace_id == after_trace), 60,
               "the span of the request sent after the aborted two", every=0.5)  # fmt: skip

    aborted = real.rows(ServerSpanRow, ServerSpanRow.trace_id.in_([probe.trace_id, client_trace]))
    assert aborted == [], [(s.trace_id, s.finish_reason, s.error_type) for s in aborted]
    after = _finished(real)
    rises = {reason: after.get(reason, 0.0) - before.get(reason, 0.0) for reason in after}
    assert sum(rises.values()) == 1.0, rises  # only the request that finished
    assert rises.get("abort", 0.0) == 0.0, rises  # vllm-project/vllm#31503: aborts count 0
