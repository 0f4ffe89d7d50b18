"""Probe runs of a generated history: what each probe kind would have measured, and the spans.

Each kind sends the requests its prober sends (:mod:`monitor.probes`): chat one short request,
tool_call and image one request that reasons first, reasoning three (thinking enabled, adaptive,
disabled; timings from the first), long_prompt a cold and a warm (prefix-cached) long prompt plus
an over-ceiling prompt the server refuses at once, agent_session ``agent_rounds`` tool turns and a
final answer with the tool's own delay between them. Every request is served by the pool's state
at the moment it is sent (:func:`monitor.history.requests.serve`); the client sees the server's
times plus a few milliseconds of network. A pool that exports OTLP gets one ``llm_request`` span per
request that reached the engine, in the probe's trace, as the simulator sends them.

Failures are the simulator's: with the pool's ``error_rate`` a request gets HTTP 500 before the
engine; a request not done within the class's probe timeout is a ``timeout``; rarely (1 in 10,000
runs) a stream breaks or an answer is wrong, as on any real week.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from monitor.history.pool import PoolState
from monitor.history.requests import Ask, Served, serve
from monitor.model import ProbePlan
from monitor.probes.result import ProbeResult, Timings, Usage
from monitor.probes.timing import percentile
from monitor.traces.span import SERVER_SPAN_NAME, ServerSpan

#: Probability per run of a broken stream / a wrong answer on a healthy pool.
BROKEN_STREAM = 1e-4
WRONG_ANSWER = 1e-4
SERVICE_NAME = "vllm-server"


def _asks(kind: str, plan: ProbePlan) -> tuple[Ask, ...]:
    """The requests one run of ``kind`` sends, in order."""
    if kind == "tool_call":
        return (Ask(180, 24, 48),)
    if kind == "image":
        return (Ask(70, 3, 48),)
    if kind == "reasoning":
        return (Ask(40, 4, 48), Ask(40, 4, 48), Ask(40, 4))
    if kind == "long_prompt":
        n = plan.long_prompt_tokens
        return (Ask(n, 8), Ask(n, 8, cached=(n - 1) // 128 * 128))
    if kind == "agent_session":
        turns = [Ask(320 + 140 * i, 24, 48) for i in range(plan.agent_rounds)]
        return (*turns, Ask(320 + 140 * plan.agent_rounds, 30, 48))
    return (Ask(26, 2),)  # chat


@dataclass
class Run:
    """One probe run being drawn: the requests served so far and what went wrong."""

    started: float
    served: list[tuple[Served, float]] = field(default_factory=list)  # (served, network seconds)
    elapsed: float = 0.0
    reason: str | None = None
    detail: str = ""
    status: int | None = 200
    spans: list[ServerSpan] = field(default_factory=list)


def _client(sv: Served, net: float) -> Timings:
    """Client-side timings of one served request."""
    samples = sv.itl_samples()
    ttft, e2e = sv.ttft + net, sv.e2e + net
    tokens = sv.tokens
    return Timings(
        ttft=ttft,
        ttft_answer=sv.token_time(sv.ask.reasoning + 1) + net,
        first_reasoning=ttft if sv.ask.reasoning else None,
        itl_mean=sum(samples) / len(samples) if samples else None,
        itl_p50=percentile(samples, 50),
        itl_p99=percentile(samples, 99),
        itl_samples=samples,
        tpot=(e2e - ttft) / (tokens - 1) if tokens > 1 else None,
        e2e=e2e,
    )


def _agent(run: Run, tool_delay: float) -> Timings:
    """A whole agent session: the first turn's TTFT, pooled ITL, task-wide TPOT and e2e."""
    turns = [_client(sv, net) for sv, net in run.served]
    samples = tuple(s for t in turns for s in t.itl_samples)
    decode = sum(sv.decode for sv, _ in run.served)
    tokens = sum(sv.tokens - 1 for sv, _ in run.served)
    return Timings(
        ttft=turns[0].ttft,
        ttft_answer=turns[-1].ttft_answer,
        first_reasoning=turns[0].first_reasoning,
        itl_mean=sum(samples) / len(samples) if samples else None,
        itl_p50=percentile(samples, 50),
        itl_p99=percentile(samples, 99),
        itl_samples=samples,
        tpot=decode / tokens if tokens else None,
        e2e=run.elapsed,
        turn_ttft=tuple(t.ttft for t in turns if t.ttft is not None),
        tool_turnaround=tuple(t.ttft for t in turns[1:] if t.ttft is not None),
    )


def _span(sv: Served, arrival: float, trace_id: str, rng: random.Random) -> ServerSpan:
    """The ``llm_request`` span the simulator exports for a finished request."""
    return ServerSpan(
        trace_id=trace_id,
        span_id=f"{rng.getrandbits(64) | 1:016x}",
        name=SERVER_SPAN_NAME,
        start=arrival,
        end=arrival + sv.e2e,
        queue=sv.queue,
        ttft=sv.ttft,
        prefill=sv.prefill,
        decode=sv.decode,
        inference=sv.prefill + sv.decode,
        e2e=sv.e2e,
        prompt_tokens=sv.ask.prompt,
        completion_tokens=sv.tokens,
        request_id=f"chatcmpl-{rng.getrandbits(64):016x}",
        service_name=SERVICE_NAME,
    )


def _send(run: Run, st: PoolState, ask: Ask, plan: ProbePlan, rng: random.Random) -> Served | None:
    """Serve one request of the run; None (and the run's failure set) when it failed."""
    net = 0.004 + rng.expovariate(1 / 0.006)
    faults = st.faults
    if faults.error_rate and rng.random() < faults.error_rate:
        run.elapsed += net
        run.reason, run.status = "http_status", faults.error_status
        run.detail = f"HTTP {faults.error_status}: Injected fault: the engine failed to process the request."
        return None
    sv = serve(st, ask, rng)
    if sv.ttft + net > plan.timeout:
        run.elapsed += plan.timeout
        run.reason, run.status = "timeout", None
        run.detail = f"ReadTimeout: no first token within {plan.timeout:g}s"
        return None
    run.served.append((sv, net))
    run.elapsed += sv.e2e + net
    return sv


def draw_run(
    kind: str,
    plan: ProbePlan,
    started: float,
    state_at: Callable[[float], PoolState],
    rng: random.Random,
    trace_id: str | None,
) -> Run:
    """One run of ``kind`` sent at ``started``; spans only when ``trace_id`` is given (OTLP on)."""
    run = Run(started)
    for i, ask in enumerate(_asks(kind, plan)):
        if i and kind == "agent_session":
            run.elapsed += plan.tool_delay
        arrival = started + run.elapsed
        sv = _send(run, state_at(arrival), ask, plan, rng)
        if sv is None:
            return run
        if trace_id is not None:
            run.spans.append(_span(sv, arrival + run.served[-1][1] / 2, trace_id, rng))
    if kind == "long_prompt":
        run.elapsed += 0.01  # the over-ceiling prompt, refused with HTTP 400 before the engine
    if rng.random() < BROKEN_STREAM:
        run.reason, run.detail = "stream_broken", "RemoteProtocolError: peer closed connection mid-stream"
    elif rng.random() < WRONG_ANSWER:
        run.reason, run.detail = "wrong_answer", "the answer does not contain the expected word"
    return run


def _extra(kind: str, run: Run) -> dict[str, float]:
    if kind == "long_prompt" and len(run.served) == 2:
        (cold, cnet), (warm, wnet) = run.served
        return {"cold_ttft": cold.ttft + cnet, "warm_ttft": warm.ttft + wnet, "cold_cached_tokens": 0.0,
                "warm_cached_tokens": float(warm.ask.cached), "prompt_tokens": float(cold.ask.prompt),
                "over_ceiling_rejected": 1.0}  # fmt: skip
    if kind == "agent_session":
        return {"turns": float(len(run.served)), "rounds_done": float(max(0, len(run.served) - 1))}
    return {}


def to_result(
    names: tuple[str, str, str, str], run: Run, plan: ProbePlan, trace_id: str | None, itl: bool
) -> ProbeResult:
    """The :class:`ProbeResult` of a run; ``names`` = (endpoint, class, kind, model id).

    ``itl`` keeps the per-token ITL samples (only needed when a probe-sourced ITL SLO counts them).
    """
    endpoint, cls, kind, model_id = names
    answered = run.served and run.reason in (None, "wrong_answer")
    timings, usage = Timings(), Usage()
    if answered:
        sv, net = run.served[0]
        timings = _agent(run, plan.tool_delay) if kind == "agent_session" else _client(sv, net)
        timings = timings if itl else _without_samples(timings)
        usage = Usage(sv.ask.prompt, sv.tokens, sv.ask.reasoning, sv.ask.cached)
    return ProbeResult(
        endpoint, cls, kind, run.started, run.reason, timings, usage,
        model=model_id if answered else None,
        finish_reason=("tool_calls" if kind == "tool_call" else "stop") if answered else None,
        status_code=run.status, trace_id=trace_id, detail=run.detail, extra=_extra(kind, run),
        finished_at=run.started + run.elapsed,
    )  # fmt: skip


def _without_samples(t: Timings) -> Timings:
    return replace(t, itl_samples=())
