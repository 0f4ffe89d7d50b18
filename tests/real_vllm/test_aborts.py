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
import time
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
#: machine changes from one request to the next (it is measured just before the cut). It runs alone, after the other tiers: .ci/run sets M3MON_REAL_ABORTS=1 for one
#: `make test-real-vllm` of this test (with the overload test, one after the other).
ALONE = os.environ.get("M3MON_REAL_ABORTS", "") not in ("", "0")
pytestmark = [
    pytest.mark.skipif(not ALONE, reason="set M3MON_REAL_ABORTS=1: timing needs a machine to itself")
]

#: Output tokens asked for (with ``ignore_eos``): seconds of decoding at this model's speed.
LONG = 1900
#: Tries at a cut that falls while vLLM is still generating (a busy machine can deliver the first
#: chunk with the last); a try whose request finished before the cut is left out, and counted.
ATTEMPTS = 3


def _cut_between_first_and_last_token(real: Real) -> tuple[float, float]:
    """The probe's timeout, halfway from this server's first token to its last, and the end itself.

    A fixed cut is wrong on some machine: a busy one gives the first token after it, a quiet one
    finishes all 1,900 tokens before it (~4 s quiet). Two uncut requests just before the probe
    runs, the slower first token and the faster end. Where a busy machine delivers the first chunk
    only with the last (vLLM's API server starved of CPU), it measures again, up to three times.
    """
    runs: list[tuple[float, float]] = []
    for _ in range(ATTEMPTS):
        runs = []
        for _ in range(2):
            t0 = time.monotonic()
            first, last = _stream(real, secrets.token_hex(16), hang_up=False)
            runs.append((first - t0, last - t0))
        ttft, e2e = max(r[0] for r in runs), min(r[1] for r in runs)
        if e2e > 2 * ttft:
            return (ttft + e2e) / 2, e2e
        time.sleep(5)
    raise AssertionError(f"{LONG} tokens: (first chunk, end) of two requests {runs}: no room for a cut")


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


def _probe_cut_mid_stream(model: Model, timeout: float) -> ProbeResult:
    (p,) = [p for p in plan_round(model, kinds=["chat"]) if p.target.endpoint.name == ENDPOINT]
    plan = dataclasses.replace(p.spec.plan, timeout=timeout)
    cut = dataclasses.replace(p, spec=dataclasses.replace(p.spec, plan=plan, max_tokens=LONG))

    async def go() -> ProbeResult:
        transport = _LongAnswers(StampingTransport(httpx.Limits(), True))
        async with httpx.AsyncClient(transport=transport) as client:
            return await run_probe(cut, client)

    return asyncio.run(go())


def _stream(real: Real, trace_id: str, *, hang_up: bool) -> tuple[float, float]:
    """A long streamed answer: the monotonic times of its first token and of its end (or hang-up).

    The first token is the first chunk, not the first text: this random-weight model's text often
    reaches the client only at the end (the tool-call parser holds what may be a call), and a client
    waiting for text hung up after vLLM had finished and traced the request (a CI failure).
    """
    body = {"model": SERVED, "max_tokens": LONG, "ignore_eos": True, "stream": True,
            "messages": [{"role": "user", "content": "Tell me a long story."}]}  # fmt: skip
    headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"}
    url = f"{real.server.base_url}/v1/chat/completions"
    first: float | None = None
    with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if first is None and line.startswith("data: {") and json.loads(line[6:]).get("choices"):
                first = time.monotonic()  # the engine's first token (vLLM streams nothing before it)
                if hang_up:
                    break  # hang up mid-stream
    assert first is not None, "the stream ended before its first token"
    return first, time.monotonic()


def _finished(real: Real) -> dict[str, float]:
    text = httpx.get(f"{real.server.base_url}/metrics", timeout=10).text
    return {s.labels["finished_reason"]: s.value for f in text_string_to_metric_families(text)
            for s in f.samples if s.name == "vllm:request_success_total"}  # fmt: skip


def _probe_timed_out(model: Model, cut: float) -> tuple[ProbeResult, list[str]]:
    """A probe cut by its timeout mid-stream, and the traces of tries that finished before the cut."""
    early: list[str] = []
    for _ in range(ATTEMPTS):
        probe = _probe_cut_mid_stream(model, cut)
        if probe.reason != "truncated" or probe.trace_id is None:  # "truncated": done before the cut
            return probe, early
        early.append(probe.trace_id)
    raise AssertionError(f"every probe finished its {LONG} tokens before its {cut:.2f}s timeout")


def _client_hung_up(real: Real, end: float) -> tuple[str, list[str]]:
    """A client that hung up in the first half of an answer's time, and the traces of later hang-ups."""
    late: list[str] = []
    for _ in range(ATTEMPTS):
        trace, t0 = secrets.token_hex(16), time.monotonic()
        hung_up, _ = _stream(real, trace, hang_up=True)
        if hung_up - t0 < end / 2:
            return trace, late
        late.append(trace)
    raise AssertionError(f"every first chunk came after half of the {end:.2f}s an answer takes")


def test_a_client_that_gives_up_mid_stream_is_counted_once(real: Real, tmp_path: Path) -> None:
    wait_for_probe_round(real)  # the service's own round is over: only this test's requests now
    model = _model(real, tmp_path)
    cut, end = _cut_between_first_and_last_token(real)
    before = _finished(real)

    probe, early = _probe_timed_out(model, cut)
    assert probe.reason == "timeout", (probe.reason, probe.detail, cut, probe.timings)
    assert probe.trace_id is not None
    assert probe.timings.ttft is not None and 0 < probe.timings.ttft < cut, probe.timings
    events = {s.slo_id.split("/")[-1]: (s.good, s.total) for s in slices_from_probe(model, probe)}
    assert events == {"availability": (0.0, 1.0), "goodput": (0.0, 1.0)}  # no TTFT event

    client_trace, late = _client_hung_up(real, end)

    after_trace = secrets.token_hex(16)  # a request that finishes: its span bounds the wait
    short = {"model": SERVED, "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]}
    r = httpx.post(f"{real.server.base_url}/v1/chat/completions", json=short, timeout=60,
                   headers={"traceparent": f"00-{after_trace}-{secrets.token_hex(8)}-01"})  # fmt: skip
    assert r.status_code == 200, r.text
    wait_until(lambda: real.rows(ServerSpanRow, ServerSpanRow.trace_id == after_trace), 60,
               "the span of the request sent after the aborted two", every=0.5)  # fmt: skip

    aborted = real.rows(ServerSpanRow, ServerSpanRow.trace_id.in_([probe.trace_id, client_trace]))
    assert aborted == [], [(s.trace_id, s.completion_tokens, s.e2e, cut) for s in aborted]
    # Tries left out (finished before the cut, or hung up late) were counted by vLLM if they finished.
    finished_early = len(real.rows(ServerSpanRow, ServerSpanRow.trace_id.in_(early + late)))
    after = _finished(real)
    rises = {reason: after.get(reason, 0.0) - before.get(reason, 0.0) for reason in after}
    assert sum(rises.values()) == 1.0 + finished_early, (rises, early, late)  # only requests that finished
    assert rises.get("abort", 0.0) == 0.0, rises  # vllm-project/vllm#31503: aborts count 0
