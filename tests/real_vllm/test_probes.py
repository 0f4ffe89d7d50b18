"""The judge and the probe clock against a real server with a random-weight model.

Random weights give random text, so every answer's shape is forced per request (``logit_bias``,
``min_tokens``, ``tool_choice``) and the judge must name what the server really did. Timings are
checked against the server's own ``llm_request`` spans, joined by trace id in the store.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor.probes.base import single_request
from monitor.probes.judge import expect_word, judge_answer
from monitor.probes.result import ProbeResult
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.tokens import ESTIMATE, calibrate, filler, prompt_of_tokens, server_tokens
from monitor.probes.tool_call import PROMPT, TOOL_NAME, TOOLS, judge_tool_turn
from monitor.probes.wire import probe_client
from monitor.store.tables import ProbeResultRow, ServerSpanRow
from tests.e2e.stack import wait_until
from tests.real_vllm.conftest import CLASS, LONG_PROMPT_TOKENS, Real, wait_for_probe_round
from tests.real_vllm.stack import MAX_MODEL_LEN

WHITESPACE = set("ĠĊĉč")  # byte-level BPE spellings of space, newline, tab, carriage return
#: Client minus server time allowed for loopback transfer and scheduling, on the quietest of the probes.
SLACK = 0.5
#: Any one probe may be delayed by a busy shared machine, but never by this much (a unit or clock error).
CEILING = 10.0


def vocabulary(model_dir: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(token -> id, added/special token -> id) from the model's tokenizer.json."""
    doc = json.loads((model_dir / "tokenizer.json").read_text())
    return dict(doc["model"]["vocab"]), {t["content"]: int(t["id"]) for t in doc["added_tokens"]}


def bias(real: Real, *, stop_early: bool) -> dict[str, int]:
    """No whitespace-only or special tokens; with ``stop_early`` the end-of-turn token wins."""
    vocab, added = vocabulary(real.server.stack.model)
    out = {str(i): -100 for t, i in vocab.items() if t and set(t) <= WHITESPACE}
    out.update({str(i): -100 for i in added.values()})
    if stop_early:
        out[str(added["<|im_end|>"])] = 100
    return out


def target(real: Real) -> Target:
    return Target(real.model.endpoints[0], real.model.request_class(CLASS))


def run(real: Real, kind: str, params: dict[str, Any], judge: str, text: str = "Return the word ready.",
        finish_reasons: tuple[str, ...] = ("tool_calls",)) -> ProbeResult:  # fmt: skip
    t = target(real)
    spec = ProbeSpec.for_class(t.request_class, kind)

    def check(ex: Any) -> Any:
        if judge == "tool":
            return judge_tool_turn(ex, t.model, finish_reasons)
        verdict = judge_answer(ex, t.model)
        return verdict if not verdict.ok else expect_word(ex.transcript.content, "ready")

    async def go() -> ProbeResult:
        async with probe_client() as client:
            return await single_request(t, spec, client, [{"role": "user", "content": text}], params, check)

    return asyncio.run(go())


def test_cut_off_answer_is_truncated(real: Real) -> None:
    result = run(
        real, "chat", {"max_tokens": 8, "seed": 1, "logit_bias": bias(real, stop_early=False)}, "chat"
    )
    assert (result.finish_reason, result.reason) == ("length", "truncated")
    assert result.usage.completion_tokens == 8


def test_finished_random_answer_is_wrong(real: Real) -> None:
    params = {"max_tokens": 16, "min_tokens": 3, "seed": 2, "logit_bias": bias(real, stop_early=True)}
    result = run(real, "chat", params, "chat")
    assert (result.finish_reason, result.reason) == ("stop", "wrong_answer")
    assert result.usage.completion_tokens is not None and result.usage.completion_tokens >= 3


def test_answer_without_a_call_is_a_malformed_tool_call(real: Real) -> None:
    params = {"tools": TOOLS, "tool_choice": "auto", "max_tokens": 16, "min_tokens": 3, "seed": 3,
              "logit_bias": bias(real, stop_early=True)}  # fmt: skip
    result = run(real, "tool_call", params, "tool", PROMPT)
    assert result.finish_reason == "stop"
    assert result.reason == "malformed_tool_call" and "no tool call" in result.detail


@pytest.mark.parametrize("choice", ["required", "named"])
def test_forced_valid_tool_call_is_judged_ok(real: Real, choice: str) -> None:
    tools = json.loads(json.dumps(TOOLS))
    tools[0]["function"]["strict"] = True
    tools[0]["function"]["parameters"]["properties"]["city"]["enum"] = ["Paris", "Lyon"]
    tool_choice: Any = (
        "required" if choice == "required" else {"type": "function", "function": {"name": TOOL_NAME}}
    )
    params = {"tools": tools, "tool_choice": tool_choice, "parallel_tool_calls": False, "max_tokens": 160,
              "seed": 4, "logit_bias": bias(real, stop_early=False)}  # fmt: skip
    # vLLM (like OpenAI) ends a call to a named function with "stop", a required one with "tool_calls"
    finish = "tool_calls" if choice == "required" else "stop"
    result = run(real, "tool_call", params, "tool", PROMPT, finish_reasons=(finish,))
    assert result.reason is None, result.detail
    assert result.finish_reason == finish
    if choice == "named":  # judged as an auto turn (which must end with tool_calls) it is incomplete
        assert run(real, "tool_call", params, "tool", PROMPT).reason == "malformed_tool_call"


def test_prompts_are_sized_by_the_servers_tokenizer(real: Real) -> None:
    """Under the ceiling on the server's count when meant to be; rejected only when really over."""

    async def go() -> tuple[int | None, int | None, str]:
        async with httpx.AsyncClient() as client:
            ep = real.model.endpoints[0]
            cal = await calibrate(client, ep)
            under = await prompt_of_tokens(client, ep, MAX_MODEL_LEN - 32, seed=5)
            over = " ".join(["x"] * 10) + " " + await prompt_of_tokens(client, ep, 2 * MAX_MODEL_LEN, seed=6)
            return await server_tokens(client, ep, under), await server_tokens(client, ep, over), cal.source

    under_count, over_count, source = asyncio.run(go())
    assert source == "tokenize"
    assert under_count is not None and MAX_MODEL_LEN * 0.85 < under_count < MAX_MODEL_LEN - 32
    assert over_count is not None and over_count > MAX_MODEL_LEN
    # what the fixed estimate (13 tokens a sentence) would have sent as a "1,500-token" prompt
    estimated = " ".join(filler(ESTIMATE.sentences(LONG_PROMPT_TOKENS), random.Random(0)))
    assert (
        asyncio.run(_count(real, estimated)) > MAX_MODEL_LEN
    )  # the server would refuse it: context_rejected


async def _count(real: Real, text: str) -> int:
    async with httpx.AsyncClient() as client:
        found = await server_tokens(client, real.model.endpoints[0], text)
    assert found is not None
    return found


def test_long_prompt_probe_stays_under_and_probes_over_the_ceiling(real: Real) -> None:
    row = next(r for r in wait_for_probe_round(real) if r.kind == "long_prompt")
    assert row.reason != "context_rejected", row.detail  # the cold prompt fits the class
    assert row.prompt_tokens is not None and row.prompt_tokens <= LONG_PROMPT_TOKENS
    assert row.prompt_tokens > 0.8 * LONG_PROMPT_TOKENS
    assert row.extra["extra"]["over_ceiling_rejected"] == 1.0  # the 1.25x prompt got the server's 400
    assert row.reason in (None, "wrong_answer", "truncated")  # a random model cannot find the needle


def test_probe_timings_bound_the_servers_own_span_timings(real: Real) -> None:
    results = [run(real, "chat", {"max_tokens": 24, "seed": 10 + i, "logit_bias": bias(real, stop_early=False)},
                   "chat") for i in range(4)]  # fmt: skip
    ids = {r.trace_id for r in results}
    assert None not in ids and len(ids) == len(results)

    def spans() -> dict[str, ServerSpanRow]:
        rows = real.rows(ServerSpanRow, ServerSpanRow.trace_id.in_(ids))
        return {r.trace_id: r for r in rows} if len(rows) == len(ids) else {}

    by_trace = wait_until(spans, 30, "the server's spans of the probes, stored by m3mon run", every=0.5)
    excess: dict[str, list[float]] = {"ttft": [], "e2e": []}
    for r in results:
        span = by_trace[r.trace_id]
        assert r.timings.ttft is not None and r.timings.e2e is not None and span.ttft and span.e2e
        assert span.ttft <= r.timings.ttft <= span.ttft + CEILING, (r.timings, span.ttft)
        assert span.e2e <= r.timings.e2e <= span.e2e + CEILING, (r.timings, span.e2e)
        excess["ttft"].append(r.timings.ttft - span.ttft)
        excess["e2e"].append(r.timings.e2e - span.e2e)
        assert span.completion_tokens == r.usage.completion_tokens == 24
    # Scheduling noise only ever adds client time, so the quietest probe shows any systematic offset.
    assert min(excess["ttft"]) <= SLACK and min(excess["e2e"]) <= SLACK, excess
    assert all(r.kind != "chat" or r.trace_id for r in real.rows(ProbeResultRow))
