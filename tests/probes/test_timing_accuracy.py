"""Client-side TTFT and ITL against the simulator's ground truth (same monotonic clock, loopback)."""

from __future__ import annotations

import asyncio
import itertools
import statistics
from typing import Any

import httpx
import pytest

from monitor.model import Model
from monitor.probes.exchange import Exchange, chat_body, stream_chat
from monitor.probes.runner import plan_round
from monitor.probes.tracing import probe_span, trace_id_of
from monitor.sim.harness import SimHandle
from monitor.sim.tokens import tokenize

pytestmark = pytest.mark.timeout(60)

#: Loopback on a shared 2-core machine: generous against scheduler noise, tight against design errors
#: (a role-only chunk counted as a token, or time taken before the request was sent, is 2+ ms off).
TOLERANCE = 0.010


def traced_exchange(model: Model) -> tuple[Exchange, str]:
    (p,) = plan_round(model, kinds=["chat"])
    body = chat_body(p.target, [{"role": "user", "content": "Explain how prefix caching helps long prompts."}],
                     max_tokens=64, chat_template_kwargs={"thinking_mode": "disabled"})  # fmt: skip

    async def go() -> tuple[Exchange, str]:
        async with httpx.AsyncClient() as client:
            with probe_span("chat", "sim", "small", p.target.model) as span:
                ex = await stream_chat(client, p.target, body, 10.0)
                return ex, str(trace_id_of(span))

    return asyncio.run(go())


def truth_for(sim: SimHandle, trace_id: str) -> dict[str, Any]:
    return next(r for r in sim.truth()["requests"] if r["trace_id"] == trace_id)


def errors_of(ex: Exchange, truth: dict[str, Any]) -> tuple[float, list[float]]:
    """(TTFT error, per-gap ITL errors) of one exchange against its ground truth."""
    times = truth["token_times"]["mono"]
    chunks = ex.transcript.chunks
    ends = list(itertools.accumulate(len(tokenize(c.text)) for c in chunks))
    assert len(chunks) >= 3 and ends[-1] == len(times) == ex.transcript.usage_int("completion_tokens")
    client_ttft = ex.timings().ttft
    assert client_ttft is not None
    ttft_error = client_ttft - (truth["first_token"]["mono"] - truth["arrival"]["mono"])
    itl_errors = [
        (cur.at - prev.at) - (times[b - 1] - times[a - 1])
        for (prev, cur), (a, b) in zip(itertools.pairwise(chunks), itertools.pairwise(ends), strict=True)
    ]
    return ttft_error, itl_errors


def test_ttft_and_itl_match_ground_truth(model: Model, healthy_sim: SimHandle) -> None:
    traced_exchange(model)  # warm the connection path; the simulator shares this process's GIL
    ttft_errors: list[float] = []
    itl_errors: list[float] = []
    for _ in range(5):
        ex, trace_id = traced_exchange(model)
        ttft_error, gaps = errors_of(ex, truth_for(healthy_sim, trace_id))
        ttft_errors.append(abs(ttft_error))
        itl_errors.extend(abs(e) for e in gaps)
    assert statistics.median(ttft_errors) < TOLERANCE, ttft_errors
    assert statistics.median(itl_errors) < TOLERANCE, itl_errors
    # the tail is scheduler noise of a shared machine (bench/probe_timing.py measures it out of process)
    assert sorted(itl_errors)[int(0.9 * len(itl_errors))] < 3 * TOLERANCE, itl_errors


def test_server_metrics_and_network_share(model: Model, healthy_sim: SimHandle) -> None:
    ex, trace_id = traced_exchange(model)
    truth = truth_for(healthy_sim, trace_id)
    t = ex.timings()
    assert t.server_queue is not None and t.server_prefill is not None and t.network is not None
    true_queue = truth["scheduled"]["mono"] - truth["queued"]["mono"]
    assert abs(t.server_queue - true_queue) < 1e-6
    assert t.ttft is not None
    true_server_ttft = truth["first_token"]["mono"] - truth["queued"]["mono"]
    assert abs(t.network - (t.ttft - true_server_ttft)) < 1e-6
    assert t.network > -TOLERANCE  # the client cannot see the token before the engine made it
