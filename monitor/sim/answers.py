"""What the simulated model says: a deterministic plan of reasoning, content and tool call.

Rules, first match wins: after a ``tool`` message, summarise the tool result; with tools offered
(and ``tool_choice`` not ``none``), call one; "Return the word X." answers ``X``; a question about
a colour with an image answers the image's dominant colour; a question about a secret/code when
the prompt holds a needle sentence ("The secret code is X") answers that sentence; otherwise a
plausible text chosen by a hash of the prompt. Faults then distort the plan.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from monitor.sim.faults import Faults
from monitor.sim.schema_values import arguments_for
from monitor.sim.tokens import count_tokens, message_text, tokenize

MARK = "]<]minimax[>["
THINK_OPEN, THINK_CLOSE = "<mm:think>", "</mm:think>"

_RETURN_WORD = re.compile(
    r"\b(?:return|reply with|answer with|say)\s+(?:only\s+)?(?:the\s+word\s+)?[\"']?(\w+)[\"']?",
    re.IGNORECASE,
)
_NEEDLE = re.compile(
    r"\b[Tt]he (secret|magic|hidden|special) ([\w ]{1,30}?) is:?\s+[\"']?([A-Za-z0-9][\w\-]*)"
)
_ASKS_NEEDLE = re.compile(r"secret|magic|hidden|password|needle|\bcode\b", re.IGNORECASE)
_ASKS_COLOUR = re.compile(r"colou?r", re.IGNORECASE)

_SENTENCES = (
    "Here is a concise answer to your question.",
    "The main idea is to keep the system simple and observable.",
    "In practice, latency depends on batch size, prompt length and cache reuse.",
    "A good first step is to measure the baseline before changing anything.",
    "Throughput grows with concurrency until the accelerator saturates.",
    "Prefix caching avoids recomputing the shared part of long prompts.",
    "Each request is scheduled, prefilled, and then decoded token by token.",
    "Error budgets turn reliability targets into concrete decisions.",
    "Short prompts usually return their first token within a few hundred milliseconds.",
    "Let me know if you would like more detail on any of these points.",
)


@dataclass(frozen=True)
class Plan:
    """The raw output a model would generate, split into token pieces by section.

    ``pieces[:n_reasoning]`` stream as ``delta.reasoning``; pieces up to ``tool_start`` as
    ``delta.content``; the rest form the tool block, emitted as one ``tool_calls`` delta once
    complete (as vLLM's ``minimax_m3`` parser does).
    """

    pieces: tuple[str, ...]
    n_reasoning: int
    tool_start: int | None
    tool_name: str | None = None
    tool_arguments: str | None = None

    @property
    def n_tokens(self) -> int:
        return len(self.pieces)


@dataclass(frozen=True)
class Ask:
    """The parts of a request that decide the answer."""

    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: Any = "auto"
    thinking_mode: str = "adaptive"
    image_colour: str | None = None
    min_tokens: int = 0  # with ignore_eos: pad the answer to this many tokens
    raw_prompt: str | None = None  # /v1/completions


def plan_answer(ask: Ask, faults: Faults, reasoning_tokens: int, answer_range: tuple[int, int]) -> Plan:
    """The deterministic plan for ``ask`` under ``faults``."""
    last_user = _last_text(ask, "user")
    seed = hashlib.sha256(
        json.dumps([ask.raw_prompt, list(ask.messages)], sort_keys=True, default=str).encode()
    )
    digest = seed.digest()
    tool = _chosen_tool(ask)
    if faults.empty_output:
        return Plan(("",), 0, None)
    content = _content_for(ask, last_user, tool is not None, digest, answer_range)
    if faults.degenerate_output:
        content = "and then the answer is " * 15
    reasoning = ""
    if ask.raw_prompt is None and _reasons(ask.thinking_mode, last_user, ask):
        reasoning = _reasoning_for(last_user, reasoning_tokens)
    name = arguments = block = None
    if tool is not None and not faults.degenerate_output:
        name = str(tool["function"]["name"])
        arguments = _arguments(tool, last_user, faults)
        block = _tool_block(name, arguments)
    if ask.min_tokens:
        content = _pad(content, ask.min_tokens - len(tokenize(reasoning)) - len(tokenize(block or "")))
    if faults.parser_leak:
        leaked = f"{THINK_OPEN}{reasoning or 'Thinking.'}{THINK_CLOSE}{content}{block or ''}"
        return Plan(tuple(tokenize(leaked)), 0, None)
    r, c = tokenize(reasoning), tokenize(content)
    if block is None:
        return Plan(tuple(r + c), len(r), None)
    return Plan(tuple(r + c + tokenize(block)), len(r), len(r) + len(c), name, arguments)


def _last_text(ask: Ask, role: str) -> str:
    if ask.raw_prompt is not None:
        return ask.raw_prompt
    for m in reversed(ask.messages):
        if m.get("role") == role:
            return message_text(m.get("content"))
    return ""


def _chosen_tool(ask: Ask) -> dict[str, Any] | None:
    if (
        not ask.tools
        or ask.tool_choice == "none"
        or (ask.messages and ask.messages[-1].get("role") == "tool")
    ):
        return None
    if isinstance(ask.tool_choice, dict):
        wanted = ask.tool_choice.get("function", {}).get("name")
        return next((t for t in ask.tools if t.get("function", {}).get("name") == wanted), ask.tools[0])
    text = _last_text(ask, "user").lower()
    return next(
        (t for t in ask.tools if str(t.get("function", {}).get("name", "")).lower() in text), ask.tools[0]
    )


def _content_for(
    ask: Ask, last_user: str, calls_tool: bool, digest: bytes, answer_range: tuple[int, int]
) -> str:
    if ask.messages and ask.messages[-1].get("role") == "tool":
        return f"The {_tool_name_of(ask)} tool returned: {message_text(ask.messages[-1].get('content'))}"
    if calls_tool:
        return ""
    word = _RETURN_WORD.search(last_user)
    if word and len(last_user.split()) <= 12:
        return word.group(1)
    if ask.image_colour and _ASKS_COLOUR.search(last_user):
        return ask.image_colour
    if _ASKS_NEEDLE.search(last_user):
        for m in [{"content": ask.raw_prompt}] if ask.raw_prompt is not None else list(ask.messages):
            found = _NEEDLE.search(message_text(m.get("content")))
            if found:
                return f"The {found.group(1)} {found.group(2)} is {found.group(3)}."
    lo, hi = answer_range
    target = lo + digest[0] % max(1, hi - lo + 1)
    return _pad("", target, start=digest[1])


def _pad(text: str, target: int, start: int = 0) -> str:
    """``text`` plus whole sentences until it has ``target`` tokens (counted incrementally)."""
    i, n = start, count_tokens(text)
    while n < target:
        piece = (" " if text else "") + _SENTENCES[i % len(_SENTENCES)]
        # a token never spans "non-space | space", so counts then add up; otherwise count afresh
        joins = text[-1:].strip() != "" and piece[:1].isspace()
        text += piece
        n = n + count_tokens(piece) if joins else count_tokens(text)
        i += 1
    return text


def _tool_name_of(ask: Ask) -> str:
    call_id = ask.messages[-1].get("tool_call_id")
    for m in reversed(ask.messages):
        for call in m.get("tool_calls") or ():
            if call.get("id") == call_id or call_id is None:
                return str(call.get("function", {}).get("name", "tool"))
    return str(ask.messages[-1].get("name") or "tool")


def _reasons(mode: str, last_user: str, ask: Ask) -> bool:
    if mode == "enabled":
        return True
    if mode == "disabled":
        return False
    return len(last_user.split()) > 8 or bool(ask.tools) or ask.image_colour is not None


def _reasoning_for(last_user: str, budget: int) -> str:
    topic = " ".join(last_user.split()[:8])
    text = f"The user asks: {topic!r}. I should work out what is needed and answer directly."
    steps = (
        " First, restate the question.",
        " Next, check the relevant facts.",
        " Then consider edge cases.",
        " Finally, give a short, clear answer.",
    )
    i = 0
    while len(tokenize(text)) < budget:
        text += steps[i % len(steps)]
        i += 1
    return "".join(tokenize(text)[:budget])


def _arguments(tool: dict[str, Any], last_user: str, faults: Faults) -> str:
    schema = tool.get("function", {}).get("parameters") or {"type": "object", "properties": {}}
    if faults.malformed_tool_call == "invalid_json":
        return json.dumps(arguments_for(schema, last_user))[:-2] + ', "'
    if faults.malformed_tool_call == "schema_mismatch":
        return json.dumps({"unexpected_argument": [1, 2, 3]})
    return json.dumps(arguments_for(schema, last_user))


def _tool_block(name: str, arguments: str) -> str:
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError:
        args = {"$text": arguments}
    inner = "".join(
        f"{MARK}<{k}>{json.dumps(v) if not isinstance(v, str) else v}{MARK}</{k}>\n"
        for k, v in (args.items() if isinstance(args, dict) else [])
    )
    return f'{MARK}<tool_call>\n{MARK}<invoke name="{name}">\n{inner}{MARK}</invoke>\n{MARK}</tool_call>'
