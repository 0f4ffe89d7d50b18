"""The stream's pre-serialised chunk frames are byte for byte the JSON of vLLM's nested chunk objects."""

from __future__ import annotations

from typing import Any

import pytest

from monitor.sim.serving import CHAT, COMPLETIONS, _View
from monitor.sim.shapes import sse


class _Req:
    request_id = 'chatcmpl-"odd"\\id-é'


def _view(endpoint: str) -> _View:
    view = _View.__new__(_View)
    view.req, view.endpoint, view.model, view.created = (
        _Req(),
        endpoint,
        "MiniMaxAI/MiniMax-M3",
        1_790_000_000,
    )  # type: ignore[assignment]
    view._chunk_head = None
    return view


def _expected(view: _View, payload: dict[str, Any], finish: str | None) -> bytes:
    choice: dict[str, Any]
    if view.endpoint == CHAT:
        choice = {"index": 0, "delta": payload, "logprobs": None, "finish_reason": finish}
    else:
        choice = {"index": 0, "text": payload.get("content", ""), "logprobs": None, "finish_reason": finish}
    if finish is not None:
        choice["stop_reason"] = None
    obj = "chat.completion.chunk" if view.endpoint == CHAT else "text_completion"
    return sse({"id": view.req.request_id, "object": obj, "created": view.created, "model": view.model,
                "choices": [choice]})  # fmt: skip


PAYLOADS = [
    {"role": "assistant", "content": ""},
    {"content": 'Rivers "carve" valleys,\n\tslowly — über 🌊'},
    {"content": ""},
    {"reasoning": "hmm\\", "reasoning_content": "hmm\\"},
    {
        "tool_calls": [
            {"index": 0, "id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]
    },
    {},
]


@pytest.mark.parametrize("endpoint", [CHAT, COMPLETIONS])
@pytest.mark.parametrize("finish", [None, "stop", "length", "tool_calls"])
def test_chunk_bytes_equal_the_serialised_nested_object(endpoint: str, finish: str | None) -> None:
    view = _view(endpoint)
    for payload in PAYLOADS:
        assert view._chunk(payload, finish) == _expected(view, payload, finish)
