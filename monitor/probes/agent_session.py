"""The agent-session probe: a multi-turn tool loop timed as a whole task.

The model is asked to look up the weather for ``ProbePlan.agent_rounds`` cities, one tool call
per turn. The probe plays the tool: it waits ``ProbePlan.tool_delay`` (the tool's own run time)
and sends the result back together with the next step of the task ("Next city: Oslo."), as an
agent harness steering a model does, so every round must produce a tool call. After the last
round the result goes back alone with the tool withheld (``tool_choice: none``) and the model
must answer in text.

Measured: each turn's TTFT (``turn_ttft``), the tool turnaround of each round (tool result
handed to the client → the model's first token after it), ITL pooled over all turns, TPOT over
all decoded tokens, and e2e = the whole task including tool time. Every turn is judged; the
verdict is the first failing turn's.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from typing import Any

import httpx

from monitor.probes.base import make_result
from monitor.probes.exchange import SAMPLING, Exchange, chat_body
from monitor.probes.judge import Verdict, judge_answer
from monitor.probes.result import ProbeResult, Timings
from monitor.probes.retry import send_chat
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.timing import percentile
from monitor.probes.tool_call import TOOLS, judge_tool_turn
from monitor.probes.tracing import probe_span

CITIES = ("Paris", "Oslo", "Lima", "Cairo", "Tokyo", "Quito", "Dakar", "Perth", "Seoul", "Rome")


def task_prompt(cities: tuple[str, ...]) -> str:
    return (f"Use the get_weather tool once per turn for each city in turn: {', '.join(cities)}. "
            "When all results are in, write one sentence summarising them.")  # fmt: skip


def next_step(city: str) -> str:
    return f"Next city: {city}. Call get_weather for it."


def tool_result(call_args: str, round_no: int) -> str:
    try:
        city = str(json.loads(call_args).get("city", "?"))
    except (json.JSONDecodeError, AttributeError):
        city = "?"
    return json.dumps({"city": city, "temperature": 12 + round_no, "unit": "celsius", "sky": "clear"})


def _assistant_turn(ex: Exchange) -> dict[str, Any]:
    calls = [{"id": c.id or f"call_{i}", "type": "function",
              "function": {"name": c.name, "arguments": c.arguments}}
             for i, c in enumerate(ex.transcript.calls())]  # fmt: skip
    return {"role": "assistant", "content": ex.transcript.content or None, "tool_calls": calls}


def session_timings(turns: list[Exchange], task_start: float, task_end: float,
                    turnarounds: list[float]) -> Timings:  # fmt: skip
    """Timings of the whole session: the first turn's TTFT, pooled ITL, task-wide TPOT and e2e."""
    per_turn = [ex.timings() for ex in turns]
    samples = tuple(s for t in per_turn for s in t.itl_samples)
    decode = [
        (t.e2e - t.ttft, ex.transcript.usage_int("completion_tokens"))
        for t, ex in zip(per_turn, turns, strict=True)
        if t.e2e is not None and t.ttft is not None
    ]
    time_sum = sum(d for d, n in decode if n is not None and n > 1)
    token_sum = sum(n - 1 for _, n in decode if n is not None and n > 1)
    first = per_turn[0]
    return replace(
        first,
        ttft_answer=per_turn[-1].ttft_answer,
        itl_samples=samples,
        chunk_gaps=tuple(g for t in per_turn for g in t.chunk_gaps),
        itl_mean=sum(samples) / len(samples) if samples else None,
        itl_p50=percentile(samples, 50),
        itl_p99=percentile(samples, 99),
        tpot=time_sum / token_sum if token_sum else None,
        e2e=task_end - task_start,
        turn_ttft=tuple(t.ttft for t in per_turn if t.ttft is not None),
        tool_turnaround=tuple(turnarounds),
        retry_seconds=sum(t.retry_seconds for t in per_turn),  # every turn's retries are in the task's e2e
        retries=tuple(r for t in per_turn for r in t.retries),
    )


async def probe(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    started_at = time.time()
    rounds = spec.plan.agent_rounds
    messages: list[dict[str, Any]] = [{"role": "user", "content": task_prompt(CITIES[:rounds])}]
    turns: list[Exchange] = []
    turnarounds: list[float] = []
    verdict = Verdict()
    with probe_span(spec.kind, target.endpoint.name, target.request_class.name, target.model) as span:
        task_start = time.monotonic()
        for round_no in range(rounds + 1):
            final = round_no == rounds
            choice = "none" if final else "auto"
            body = chat_body(target, messages, tools=TOOLS, tool_choice=choice, max_tokens=256, **SAMPLING)
            ex = await send_chat(client, target, body, spec.plan.timeout)
            turns.append(ex)
            if round_no > 0 and ex.transcript.first() is not None:
                turnarounds.append(ex.transcript.first() - ex.started)  # type: ignore[operator]
            verdict = judge_answer(ex, target.model) if final else judge_tool_turn(ex, target.model)
            if not verdict.ok or final:
                break
            await asyncio.sleep(spec.plan.tool_delay)
            messages.append(_assistant_turn(ex))
            call = ex.transcript.calls()[0]
            messages.append({"role": "tool", "tool_call_id": call.id or "call_0",
                             "content": tool_result(call.arguments, round_no)})  # fmt: skip
            if round_no + 1 < rounds:
                messages.append({"role": "user", "content": next_step(CITIES[round_no + 1])})
        if verdict.ok and turns[-1].transcript.tool_calls:
            verdict = Verdict("malformed_tool_call", "tool called after tool_choice none")
        timings = session_timings(turns, task_start, time.monotonic(), turnarounds)
        extra = {"turns": float(len(turns)), "rounds_done": float(min(len(turns) - 1, rounds))}
        return make_result(target, spec, started_at, verdict, turns[-1], span, timings=timings, extra=extra)
