"""Real traffic of a generated history: a tenant mix's requests, as spans and traffic SLO slices.

Besides its users (the scrape intervals) and the probes, a pool named in :attr:`RealTraffic.pools`
serves the requests of a :class:`~monitor.sim.tenants.TenantMix` (a few heavy tenants, a Zipf
tail, one tenant with long prompts and long answers), arriving at ``peak_rate × load(t)``. A request
refused before the engine (the pool's error rate, planned work) leaves no server span, as on the
simulator; every other one is served like a probe's request (:func:`monitor.history.requests.serve`)
and exported as an ``llm_request`` span naming its tenant and priority, as a gateway tags them.

Every :data:`BATCH` seconds the batch is judged as ``m3mon run`` judges one OTLP batch
(:class:`~monitor.slo.traffic.TrafficJudge`: endpoint, class, tenant label, priority band, good) and
written as its stored spans (with their tenant labels) and one slice per ``source: traffic`` SLO.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from monitor.history.pool import PoolState
from monitor.history.requests import Ask, serve
from monitor.history.scenario import Scenario, load
from monitor.model import Endpoint, Model
from monitor.sim.tenants import TenantMix
from monitor.sim.tokens import render_chat, tokenize
from monitor.slo.traffic import TrafficJudge, traffic_slices
from monitor.store.ops import Op, slices_op, spans_op
from monitor.traces.span import SERVER_SPAN_NAME, ServerSpan

#: Seconds of real traffic judged and written together (one OTLP batch of the live service).
BATCH = 300.0


@dataclass(frozen=True)
class RealTraffic:
    """Which pools serve the tenant mix, and how many of its requests per second at peak load."""

    mix: TenantMix
    peak_rate: float
    pools: tuple[str, ...]


@cache
def prompt_tokens(words: int) -> int:
    """Tokens the simulator charges for a one-message chat of ``words`` words (as the mix sends)."""
    return len(tokenize(render_chat([{"role": "user", "content": " ".join(["w1234"] * words)}], None)))


def _span(ep: Endpoint, arrival: float, ask: Ask, who: tuple[str, int], st: PoolState,
          rng: random.Random) -> ServerSpan:  # fmt: skip
    sv = serve(st, ask, rng)
    return ServerSpan(
        trace_id=f"{rng.getrandbits(128) | 1:032x}", span_id=f"{rng.getrandbits(64) | 1:016x}",
        name=SERVER_SPAN_NAME, start=arrival, end=arrival + sv.e2e, queue=sv.queue, ttft=sv.ttft,
        prefill=sv.prefill, decode=sv.decode, inference=sv.prefill + sv.decode, e2e=sv.e2e,
        prompt_tokens=ask.prompt, completion_tokens=sv.tokens,
        request_id=f"chatcmpl-{rng.getrandbits(64):016x}", service_name=ep.service_name,
        tenant=who[0], priority=float(who[1]),
    )  # fmt: skip


def _batch(ep: Endpoint, plan: RealTraffic, start: float, state_at: Callable[[float], PoolState],
           rng: random.Random, counts: np.random.Generator) -> list[ServerSpan]:  # fmt: skip
    """The spans of the mix's requests arriving on ``ep`` in ``[start, start + BATCH)``."""
    n = int(counts.poisson(plan.peak_rate * load(start + BATCH / 2) * BATCH))
    arrivals = sorted(start + rng.random() * BATCH for _ in range(n))
    spans = []
    for arrival, who in zip(arrivals, plan.mix.draw(rng, n), strict=True):
        st = state_at(arrival)
        if st.faults.error_rate and rng.random() < st.faults.error_rate:
            continue  # refused before the engine: no span
        long = plan.mix.is_long(who[0], rng)
        ask = Ask(prompt_tokens(plan.mix.prompt_words(long)), plan.mix.output_tokens(long))
        spans.append(_span(ep, arrival, ask, who, st, rng))
    return spans


def traffic_runs(
    model: Model, plan: RealTraffic, scn: Scenario, states: dict[str, Callable[[float], PoolState]], seed: int
) -> tuple[list[tuple[float, Op]], int]:
    """(event time, op) of every batch's spans and traffic slices, and how many requests were served."""
    judge, out, served = TrafficJudge(model), [], 0
    for i, ep in enumerate(e for e in model.endpoints if e.name in plan.pools):
        rng, counts = random.Random(f"{seed}:traffic:{ep.name}"), np.random.default_rng(seed * 1000 + 500 + i)
        start = scn.start
        while start + BATCH <= scn.end - 60.0:  # a long request still ends inside the history
            spans = _batch(ep, plan, start, states[ep.name], rng, counts)
            if spans:
                at = max(start + BATCH, max(s.end for s in spans))
                found = judge.verdicts(spans, lambda _trace: False)
                out.append((at, spans_op(found.spans)))
                out.append((at, slices_op(traffic_slices(model, found.judged, at))))
                served += len(spans)
            start += BATCH
    return out, served
