"""The simulator's ``POST /tokenize``, shaped like vLLM's (SGLang's answer has the same keys).

Body: ``{"model", "prompt"}`` or ``{"model", "messages", "tools"?, "add_generation_prompt"?}``;
answer ``{"count", "max_model_len", "tokens", "token_strs": null}``. The count is what the engine
would charge for the same prompt (:func:`monitor.sim.tokens.tokenize` of the text, or of the
rendered chat), so a prompt sized with it is sized exactly. Token ids are stable per piece (a
CRC-32 of the piece in the model's vocabulary range); errors are vLLM's 400/404 bodies.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from monitor.sim.simulator import Simulator
from monitor.sim.tokens import render_chat, tokenize

VOCAB = 200_064


def _error(status: int, kind: str, message: str) -> Response:
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": status}}, status)


def pieces(doc: dict[str, Any]) -> list[str] | None:
    """Token pieces of a ``/tokenize`` body; None when it has neither ``prompt`` nor ``messages``."""
    if isinstance(doc.get("prompt"), str):
        return tokenize(doc["prompt"])
    messages = doc.get("messages")
    if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
        tools = doc.get("tools") if isinstance(doc.get("tools"), list) else None
        return tokenize(render_chat(messages, tools))
    return None


async def handle_tokenize(sim: Simulator, request: Request) -> Response:
    try:
        doc = json.loads(await request.body() or b"{}")
    except json.JSONDecodeError as exc:
        return _error(400, "BadRequestError", f"invalid JSON body: {exc}")
    if not isinstance(doc, dict):
        return _error(400, "BadRequestError", "expected a JSON object")
    model = doc.get("model")
    if model not in (None, sim.config.model):
        return _error(404, "NotFoundError", f"The model `{model}` does not exist.")
    found = pieces(doc)
    if found is None:
        return _error(400, "BadRequestError", "either `prompt` (string) or `messages` is required")
    ids = [zlib.crc32(p.encode()) % VOCAB for p in found]
    body = {"count": len(ids), "max_model_len": sim.config.max_model_len, "tokens": ids, "token_strs": None}
    return JSONResponse(body)
