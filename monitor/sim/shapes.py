"""JSON shapes of vLLM 0.33 OpenAI-compatible responses: chunks, full responses, usage, errors."""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.responses import JSONResponse

from monitor.sim.request import SimRequest


def error(status: int, message: str, type_: str) -> JSONResponse:
    """vLLM's ``ErrorResponse`` body."""
    return JSONResponse({"error": {"message": message, "type": type_, "param": None, "code": status}}, status)


def tool_call_id() -> str:
    return f"chatcmpl-tool-{uuid.uuid4().hex}"


def usage(req: SimRequest, details: bool) -> dict[str, Any]:
    """``UsageInfo`` of a finished (or cut) request."""
    out: dict[str, Any] = {
        "prompt_tokens": req.prompt_tokens,
        "total_tokens": req.prompt_tokens + req.generated,
        "completion_tokens": req.generated,
        "prompt_tokens_details": {"cached_tokens": req.num_cached} if details else None,
    }
    if req.endpoint == "/v1/chat/completions":
        out["completion_tokens_details"] = {"reasoning_tokens": min(req.generated, req.plan.n_reasoning)}
    return out


def per_request_metrics(req: SimRequest) -> dict[str, Any] | None:
    """The ``--enable-per-request-metrics`` object (times from the latest scheduling)."""
    if req.scheduled is None or req.first_token is None or req.queued is None:
        return None
    last = req.token_times[-1]
    gen = last - req.first_token
    run = last - req.scheduled
    return {
        "time_to_first_token_ms": (req.first_token - req.scheduled) * 1000,
        "generation_time_ms": gen * 1000,
        "queue_time_ms": (req.scheduled - req.queued) * 1000,
        "mean_itl_ms": gen / (req.generated - 1) * 1000 if req.generated > 1 else None,
        "tokens_per_second": req.generated / run if run > 0 else None,
    }


def sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"
