"""What a streamed chat completion said and when: the fold of its SSE events.

:class:`Transcript` takes timestamped :class:`~monitor.probes.stream.SseEvent` objects one by
one and keeps the answer text, reasoning text, tool calls, finish reason, model id, usage and
per-request metrics, plus the arrival time of every token-bearing chunk (with its token count
when the server sends running usage). A role-only chunk is not a token.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from monitor.probes.stream import SseEvent

#: Keys a delta may carry reasoning under (``reasoning`` since vLLM 0.12, ``reasoning_content`` before).
REASONING_KEYS = ("reasoning", "reasoning_content")


@dataclass
class ToolCallDraft:
    """One tool call as assembled from its streamed fragments."""

    id: str | None = None
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True)
class TokenChunk:
    """A chunk that carried tokens: when it arrived, which channel, how many tokens (if known)."""

    at: float
    channel: str  # "reasoning" or "answer"
    tokens: int | None
    text: str = ""  # the reasoning/content text of the chunk (tool-call fragments excluded)


@dataclass
class Transcript:
    """The accumulated state of one streamed chat completion."""

    model: str | None = None
    content: str = ""
    reasoning: str = ""
    tool_calls: dict[int, ToolCallDraft] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    error: str | None = None  # an in-stream error object
    done: bool = False  # saw ``data: [DONE]``
    bad_events: int = 0  # events that were not JSON objects
    chunks: list[TokenChunk] = field(default_factory=list)
    last_at: float | None = None
    _running_tokens: int = 0

    def add(self, event: SseEvent) -> None:
        """Fold one event into the transcript."""
        self.last_at = event.at
        if event.is_done:
            self.done = True
            return
        try:
            payload = json.loads(event.data)
        except json.JSONDecodeError:
            self.bad_events += 1
            return
        if not isinstance(payload, dict):
            self.bad_events += 1
            return
        self._add_payload(event.at, payload)

    def extend(self, events: Iterable[SseEvent]) -> Transcript:
        for event in events:
            self.add(event)
        return self

    def _add_payload(self, at: float, payload: dict[str, Any]) -> None:
        if isinstance(payload.get("error"), dict | str):
            err = payload["error"]
            self.error = str(err.get("message", err) if isinstance(err, dict) else err)[:200]
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]
        usage = payload.get("usage")
        running = _completion_tokens(usage)
        tokens = None if running is None else running - self._running_tokens
        if isinstance(usage, dict):
            self.usage = usage
            self._running_tokens = running if running is not None else self._running_tokens
        if isinstance(payload.get("metrics"), dict):
            self.metrics = payload["metrics"]
        channels: list[str] = []
        reasoning_before, content_before = len(self.reasoning), len(self.content)
        for choice in payload.get("choices") or []:
            if isinstance(choice, dict):
                channels.extend(self._add_choice(choice))
        if channels:
            channel = "answer" if "answer" in channels else "reasoning"
            text = self.reasoning[reasoning_before:] + self.content[content_before:]
            self.chunks.append(TokenChunk(at, channel, tokens, text))

    def _add_choice(self, choice: dict[str, Any]) -> list[str]:
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta") or {}
        channels: list[str] = []
        for key in REASONING_KEYS:
            if isinstance(delta.get(key), str) and delta[key]:
                self.reasoning += delta[key]
                channels.append("reasoning")
                break
        if isinstance(delta.get("content"), str) and delta["content"]:
            self.content += delta["content"]
            channels.append("answer")
        for call in delta.get("tool_calls") or []:
            if isinstance(call, dict):
                self._add_tool_call(call)
                channels.append("answer")
        return channels

    def _add_tool_call(self, call: dict[str, Any]) -> None:
        index = call.get("index", len(self.tool_calls))
        draft = self.tool_calls.setdefault(int(index) if isinstance(index, int) else 0, ToolCallDraft())
        if call.get("id"):
            draft.id = str(call["id"])
        function = call.get("function") or {}
        if isinstance(function.get("name"), str):
            draft.name += function["name"]
        if isinstance(function.get("arguments"), str):
            draft.arguments += function["arguments"]

    # --- derived facts -------------------------------------------------------------------

    def first(self, channel: str | None = None) -> float | None:
        """Arrival time of the first token chunk (of ``channel``, or of any kind)."""
        return next((c.at for c in self.chunks if channel is None or c.channel == channel), None)

    def usage_int(self, *path: str) -> int | None:
        """An integer inside ``usage`` (e.g. ``"prompt_tokens_details", "cached_tokens"``)."""
        node: Any = self.usage
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node if isinstance(node, int) and not isinstance(node, bool) else None

    def calls(self) -> list[ToolCallDraft]:
        return [self.tool_calls[i] for i in sorted(self.tool_calls)]


def _completion_tokens(usage: Any) -> int | None:
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        return int(usage["completion_tokens"])
    return None
