"""Requests whose client gave up mid-stream, on a real vLLM: what each side counts (docs/slo-events.md,
"Requests the client gave up on").

Two clients disconnect while vLLM is still generating (``ignore_eos`` and 1,900 output tokens:
seconds of decoding on this tiny model):

* the monitor's own probe, cut off by its timeout (the real runner, exchange and tracer; only the
  request's length is forced): a ``timeout``, so one bad event of probe availability and of
  goodput and no latency event, with its trace id and the TTFT it measured kept;
* a real-traffic client that closes its connection at its first token, or sooner if none came
  within a quarter of the time the engine takes for a whole answer.

vLLM 0.32 aborts both (``AsyncLLM.abort``) and reports neither: no ``llm_request`` span (its
``do_tracing`` runs only for requests that finish in the engine) and no
``request_success_total{finished_reason="abort"}`` increment (vllm-project/vllm#31503). So the
probe's failure is counted once, by the probe SLIs, and the real client's abort is seen by no
server-side figure: what the docs state. A request sent afterwards bounds the wait: its span is
stored, so any span of an aborted one would have been exported before it.

On a busy machine the engine can finish all 1,900 tokens before vLLM sees the client go (its API
server, starved of CPU, still delivers early tokens): vLLM then traces and counts the request as
finished. Such a try is no abort; it is left out (and its count expected) and tried again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import secrets
import time
from collections.abc import Callable
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
from tests.support import localhttp

#: The cut must fall between the first token and the last of a real server whose speed a busy
#: machine changes from one request to the next (it is measured just before the cut). It runs after the
#: other tiers: .ci/run sets M3MON_REAL_ABORTS=1 for its own `make test-real-vllm` step, whose tests
#: run one at a time (this module first).
ALONE = os.environ.get("M3MON_REAL_ABORTS", "") not in ("", "0")
pytestmark = [
    pytest.mark.skipif(not ALONE, reason="set M3MON_REAL_ABORTS=1: timing needs a machine to itself")
]

#: Output tokens asked for (with ``ignore_eos``): seconds of decoding at this model's speed.
LONG = 1900
#: Tries at a client going while vLLM is still generating; one that vLLM finished first is left out.
ATTEMPTS = 3


def _cut_between_first_and_last_token(real: Real) -> tuple[float, float]:
    """The probe's timeout and how long the engine takes for a whole answer, from two uncut
    requests just before the probe runs: halfway from the earlier first chunk to the earlier end of
    generation in the engine (vLLM's span), or a third of that end when the first chunk came later.

    A fixed cut is wrong on some machine: a busy one gives the first token after it, a quiet one
    finishes all 1,900 tokens before it (~4 s quiet). On a busy machine the engine can finish long
    before its API server (starved of CPU) has delivered the first chunks: the engine's time, not
    the client's, bounds a cut that vLLM still has to abort.
    """
    runs, traces = [], [secrets.token_hex(16) for _ in range(2)]
    for trace in traces:
        t0 = time.monotonic()
        first, _ = _stream(real, trace)
        assert first is not None
        runs.append(first - t0)
    _settled(real)
    engine = min(s.e2e or 0.0 for s in real.rows(ServerSpanRow, ServerSpanRow.trace_id.in_(traces)))
    ttft = min(runs)
    assert engine > 0, f"no engine time in the spans of {traces}"
    return ((ttft + engine) / 2 if ttft < engine / 3 else engine / 3), engine


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


def _stream(real: Real, trace_id: str, *, give_up_after: float | None = None) -> tuple[float | None, float]:
    """A long streamed answer: the monotonic times of its first token (None: none came) and of its
    end, or of the hang-up when ``give_up_after`` is set: at the first token, or after that many
    seconds without one, whichever comes first.

    The first token is the first chunk, not the first text: this random-weight model's text often
    reaches the client only at the end (the tool-call parser holds what may be a call). On a busy
    machine even the first chunk can come with the last (vLLM's API server starved of CPU): the
    client then gives up while the engine is still generating, as an impatient user does.
    """
    body = {"model": SERVED, "max_tokens": LONG, "ignore_eos": True, "stream": True,
            "messages": [{"role": "user", "content": "Tell me a long story."}]}  # fmt: skip
    headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"}
    url = f"{real.server.base_url}/v1/chat/completions"
    timeout = httpx.Timeout(60, read=give_up_after) if give_up_after is not None else httpx.Timeout(60)
    first: float | None = None
    with (
        contextlib.suppress(httpx.ReadTimeout),
        httpx.stream("POST", url, json=body, headers=headers, timeout=timeout) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if first is None and line.startswith("data: {") and json.loads(line[6:]).get("choices"):
                first = time.monotonic()  # the engine's first token (vLLM streams nothing before it)
                if give_up_after is not None:
                    break  # hang up mid-stream
    assert first is not None or give_up_after is not None, "the stream ended before its first token"
    return first, time.monotonic()


def _finished(real: Real) -> dict[str, float]:
    text = localhttp.get(f"{real.server.base_url}/metrics", timeout=10).text
    return {s.labels["finished_reason"]: s.value for f in text_string_to_metric_families(text)
            for s in f.samples if s.name == "vllm:request_success_total"}  # fmt: skip


def _settled(real: Real) -> None:
    """Send a request that finishes and wait for its span: any span of an earlier request is stored."""
    trace = secrets.token_hex(16)
    short = {"model": SERVED, "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]}
    r = localhttp.post(f"{real.server.base_url}/v1/chat/completions", json=short, timeout=60,
                   headers={"traceparent": f"00-{trace}-{secrets.token_hex(8)}-01"})  # fmt: skip
    assert r.status_code == 200, r.text
    wait_until(lambda: real.rows(ServerSpanRow, ServerSpanRow.trace_id == trace), 60,
               "the span of a request sent after the abandoned one", every=0.5)  # fmt: skip


def _traced(real: Real, trace: str) -> bool:
    """Whether vLLM traced the request: it finished in the engine before vLLM saw the client go (on
    a busy machine the engine can finish while its API server still delivers early tokens)."""
    _settled(real)
    return bool(real.rows(ServerSpanRow, ServerSpanRow.trace_id == trace))


def _abandoned(real: Real, give_up: Callable[[], tuple[str, bool]]) -> tuple[int, list[str]]:
    """Tries of ``give_up`` (its trace, and whether the try is what the test needs) until one that
    vLLM aborted (not traced), up to ATTEMPTS: how many tries, and the traces of those vLLM finished."""
    finished: list[str] = []
    for tries in range(1, ATTEMPTS + 1):
        trace, usable = give_up()
        traced = _traced(real, trace)
        finished += [trace] if traced else []
        if usable and not traced:
            return tries, finished
    pytest.skip(
        f"vLLM finished all {ATTEMPTS} tries before it saw their client go (this machine's timing "
        f"cannot make an abort): {finished}"
    )


def test_a_client_that_gives_up_mid_stream_is_counted_once(real: Real, tmp_path: Path) -> None:
    wait_for_probe_round(real)  # the service's own round is over: only this test's requests now
    model = _model(real, tmp_path)
    cut, engine = _cut_between_first_and_last_token(real)
    before = _finished(real)

    def probe_gives_up() -> tuple[str, bool]:
        probe = _probe_cut_mid_stream(model, cut)
        assert probe.trace_id is not None
        if probe.reason == "truncated":  # all its tokens came before the cut (a fast moment): no cut
            return probe.trace_id, False
        assert probe.reason == "timeout", (probe.reason, probe.detail, cut, probe.timings)
        events = {s.slo_id.split("/")[-1]: (s.good, s.total) for s in slices_from_probe(model, probe)}
        assert events == {"availability": (0.0, 1.0), "goodput": (0.0, 1.0)}  # no TTFT event
        # Its first token, when one came before the cut, is kept (a busy machine may deliver none).
        assert probe.timings.ttft is None or 0 < probe.timings.ttft < cut, probe.timings
        return probe.trace_id, True

    def client_gives_up() -> tuple[str, bool]:
        trace = secrets.token_hex(16)
        _stream(real, trace, give_up_after=engine / 4)
        return trace, True

    probe_tries, probe_finished = _abandoned(real, probe_gives_up)
    client_tries, client_finished = _abandoned(real, client_gives_up)

    # vLLM counted the requests that finished: each settling request and each try it finished
    # before its client went; nothing for the two it aborted.
    settled = probe_tries + client_tries  # one settling request after each try
    after = _finished(real)
    rises = {reason: after.get(reason, 0.0) - before.get(reason, 0.0) for reason in after}
    assert sum(rises.values()) == settled + len(probe_finished) + len(client_finished), rises
    assert rises.get("abort", 0.0) == 0.0, rises  # vllm-project/vllm#31503: aborts count 0
