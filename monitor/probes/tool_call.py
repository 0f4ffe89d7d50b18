"""The tool-call probe: one tool with a JSON schema; the model must call it, correctly.

The answer must carry a tool call to ``get_weather`` whose arguments are a JSON string that
parses and validates against the tool's schema, with ``finish_reason: tool_calls``; anything
else is ``malformed_tool_call``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from jsonschema import Draft202012Validator

from monitor.probes.base import single_request
from monitor.probes.exchange import SAMPLING, Exchange
from monitor.probes.judge import Verdict, judge_answer
from monitor.probes.result import ProbeResult
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.transcript import ToolCallDraft

TOOL_NAME = "get_weather"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Current weather for a city.",
            "parameters": SCHEMA,
        },
    }
]
PROMPT = "What is the weather in Paris right now, in celsius? Use the get_weather tool."
_VALIDATOR = Draft202012Validator(SCHEMA)


def check_tool_call(call: ToolCallDraft | None, name: str = TOOL_NAME,
                    validator: Draft202012Validator = _VALIDATOR) -> Verdict:  # fmt: skip
    """``malformed_tool_call`` unless ``call`` names ``name`` with schema-valid JSON arguments."""
    if call is None:
        return Verdict("malformed_tool_call", "no tool call in the answer")
    if call.name != name:
        return Verdict("malformed_tool_call", f"called {call.name[:40]!r}, expected {name!r}")
    try:
        args = json.loads(call.arguments)
    except json.JSONDecodeError as exc:
        return Verdict("malformed_tool_call", f"arguments are not JSON: {exc.msg} at {exc.pos}")
    error = next(iter(validator.iter_errors(args)), None)
    if error is not None:
        return Verdict("malformed_tool_call", f"arguments fail the schema: {error.message[:120]}")
    return Verdict()


def judge_tool_turn(ex: Exchange, model: str, finish_reasons: tuple[str, ...] = ("tool_calls",)) -> Verdict:
    """Shared checks plus: a valid call and a finish reason in ``finish_reasons``.

    ``tool_calls`` is what ``tool_choice: auto``/``required`` ends with; a request naming the
    function (``tool_choice: {"type": "function", ...}``) ends with ``stop`` on vLLM (as on OpenAI),
    so a caller sending one passes ``("tool_calls", "stop")``.
    """
    verdict = judge_answer(ex, model)
    if not verdict.ok:
        return verdict
    calls = ex.transcript.calls()
    verdict = check_tool_call(calls[0] if calls else None)
    if verdict.ok and ex.transcript.finish_reason not in finish_reasons:
        return Verdict(
            "malformed_tool_call", f"finish_reason {ex.transcript.finish_reason!r}, not tool_calls"
        )
    return verdict


async def probe(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    params = {"tools": TOOLS, "tool_choice": "auto", "max_tokens": 256, **SAMPLING}
    messages = [{"role": "user", "content": PROMPT}]
    return await single_request(
        target, spec, client, messages, params, lambda ex: judge_tool_turn(ex, target.model)
    )
