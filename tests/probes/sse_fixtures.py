"""Recorded SSE byte streams (vLLM 0.33 chunk shapes) for parser and judge tests."""

from __future__ import annotations

import json
from typing import Any

MODEL = "MiniMaxAI/MiniMax-M3"


def frame(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None,
          model: str = MODEL) -> bytes:  # fmt: skip
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
                            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}  # fmt: skip
    if usage is not None:
        body["usage"] = usage
    return frame(body)


def usage_chunk(prompt: int, completion: int, cached: int | None = None, reasoning: int | None = None,
                metrics: dict[str, Any] | None = None, model: str = MODEL) -> bytes:  # fmt: skip
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}  # fmt: skip
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model,
                            "choices": [], "usage": usage}  # fmt: skip
    if metrics is not None:
        body["metrics"] = metrics
    return frame(body)


DONE = b"data: [DONE]\n\n"


def timed(frames: list[bytes], start: float = 100.0, step: float = 0.01) -> list[tuple[float, bytes]]:
    """Frames as arriving ``step`` seconds apart."""
    return [(start + i * step, f) for i, f in enumerate(frames)]


def ready_stream(model: str = MODEL) -> list[bytes]:
    """A healthy "ready" answer: role chunk, two content chunks, finish, usage, [DONE]."""
    return [
        chunk({"role": "assistant", "content": ""}, model=model),
        chunk({"content": "Re"}, model=model),
        chunk({"content": "ady."}, model=model),
        chunk({"content": ""}, "stop", model=model),
        usage_chunk(12, 2, model=model),
        DONE,
    ]
