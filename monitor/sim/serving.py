"""``POST /v1/chat/completions`` and ``POST /v1/completions`` of the simulated server."""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from monitor.sim.answers import plan_answer
from monitor.sim.engine import QueueFullError
from monitor.sim.faults import Faults
from monitor.sim.protocol import Parsed, RequestError, parse_chat, parse_completion
from monitor.sim.request import SimRequest
from monitor.sim.shapes import DONE, error, per_request_metrics, sse, tool_call_id, usage
from monitor.sim.sse import SSEResponse, StreamCut
from monitor.sim.wire import RECEIVED

#: The ``stream_stall`` fault pauses a stream after this many chunks.
STALL_AFTER_CHUNKS = 4

if TYPE_CHECKING:
    from monitor.sim.simulator import Simulator

CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"


async def handle(sim: Simulator, request: Request, endpoint: str) -> Response:
    """Validate, admit and answer one request (streaming or not)."""
    faults = sim.faults
    refusal = sim.refusal(faults)
    if refusal is not None:
        return refusal
    try:
        raw = await request.body()
        arrival = time.monotonic()  # like vLLM: a request arrives once its body has been read
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise RequestError(400, "request body must be a JSON object")
        if body.get("model") not in (None, sim.config.model):
            raise RequestError(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        parsed = (parse_chat if endpoint == CHAT else parse_completion)(body, sim.config)
    except json.JSONDecodeError as exc:
        return error(400, f"Invalid JSON body: {exc}", "BadRequestError")
    except RequestError as exc:
        return error(exc.status, exc.message, exc.type)
    if faults.error_next:
        sim.faults = sim.faults.merged({"error_next": faults.error_next - 1 or None})
        return _injected(faults)
    if faults.error_rate and sim.rng.random() < faults.error_rate:
        return _injected(faults)
    req = _build(sim, request, endpoint, parsed, faults, arrival)
    await asyncio.sleep(_preprocessing(sim, req, faults))  # arrival -> queued: the API server's work
    try:
        sim.submit(req)
    except QueueFullError:
        return error(
            429,
            f"The server is busy: the waiting queue is full (max_num_queued_reqs="
            f"{sim.config.max_queue}). Please retry later.",
            "TooManyRequestsError",
        )
    view = _View(sim, req, parsed, endpoint, faults)
    if parsed.stream:
        return SSEResponse(view.frames(), lambda: sim.engine.abort(req))  # type: ignore[return-value]
    return await view.whole()


def _injected(faults: Faults) -> Response:
    """An injected error answer (``error_rate``, ``error_next``), with ``retry_after_ms`` headers."""
    response = error(
        faults.error_status,
        "Injected fault: the engine failed to process the request.",
        "InternalServerError" if faults.error_status >= 500 else "BadRequestError",
    )
    if faults.retry_after_ms is not None:
        response.headers["retry-after-ms"] = str(faults.retry_after_ms)
        response.headers["retry-after"] = str(math.ceil(faults.retry_after_ms / 1000))
    return response


def _preprocessing(sim: Simulator, req: SimRequest, faults: Faults) -> float:
    """Seconds the API server spends on ``req`` before the engine queues it (chat template,
    tokenizer, image patches: docs/simulator.md), plus the ``preprocess_delay`` fault."""
    c = sim.config
    return c.preprocess_overhead + req.prompt_tokens / c.tokenize_tps + (faults.preprocess_delay or 0.0)


def _build(
    sim: Simulator, request: Request, endpoint: str, parsed: Parsed, faults: Faults, arrival: float
) -> SimRequest:
    ask = parsed.ask
    min_tokens = parsed.max_tokens if parsed.ignore_eos and parsed.max_tokens else 0
    if faults.truncated_output:
        min_tokens = max(min_tokens, faults.truncated_output + 8)
    if min_tokens:
        ask = replace(ask, min_tokens=min_tokens)
    plan = plan_answer(ask, faults, sim.config.reasoning_tokens, sim.config.answer_tokens)
    limit = (
        parsed.max_tokens
        if parsed.max_tokens is not None
        else sim.config.max_model_len - parsed.prompt_tokens
    )
    if faults.truncated_output:
        limit = min(limit, faults.truncated_output)
    prefix = "chatcmpl-" if endpoint == CHAT else "cmpl-"
    rid = prefix + (request.headers.get("x-request-id") or uuid.uuid4().hex)
    trace = {k: request.headers[k] for k in ("traceparent", "tracestate") if k in request.headers}
    stamp = request.scope.get("extensions", {}).get(RECEIVED, {})
    return SimRequest(
        rid,
        parsed.prompt_tokens,
        parsed.prompt_hashes,
        plan,
        limit,
        arrival,
        max_tokens=parsed.max_tokens,
        ignore_eos=parsed.ignore_eos and parsed.max_tokens is not None,
        params=parsed.params,
        trace_headers=trace,
        endpoint=endpoint,
        received=stamp.get("at"),
    )


class _View:
    """Turns engine progress of one request into vLLM-shaped chunks or a full response."""

    def __init__(
        self, sim: Simulator, req: SimRequest, parsed: Parsed, endpoint: str, faults: Faults
    ) -> None:
        self.sim, self.req, self.parsed, self.endpoint, self.faults = sim, req, parsed, endpoint, faults
        self.model = faults.wrong_model or sim.config.model
        self.created = int(time.time())
        self.sent = 0
        self.tool_id = tool_call_id()
        self._chunk_head: bytes | None = None

    def _finish_reason(self) -> str:
        """vLLM's: ``tool_calls`` after an auto/required call; a named function's call ends ``stop``."""
        reason = self.req.finish_reason or "stop"
        named = isinstance(self.parsed.ask.tool_choice, dict)
        if reason == "stop" and self.req.plan.tool_start is not None and not named:
            return "tool_calls"
        return reason

    def _sections(self, start: int, end: int) -> tuple[str, str]:
        plan = self.req.plan
        cut = plan.tool_start if plan.tool_start is not None else plan.n_tokens
        reasoning = "".join(plan.pieces[start : min(end, plan.n_reasoning)])
        content = "".join(plan.pieces[max(start, plan.n_reasoning) : min(end, cut)])
        return reasoning, content

    def _tool_calls(self, index: bool) -> list[dict[str, Any]] | None:
        plan = self.req.plan
        if plan.tool_start is None or self.req.generated < plan.n_tokens:
            return None
        call = {
            "id": self.tool_id,
            "type": "function",
            "function": {"name": plan.tool_name, "arguments": plan.tool_arguments},
        }
        return [{"index": 0, **call}] if index else [call]

    async def whole(self) -> Response:
        while not await self.req.events.get():
            pass
        req = self.req
        if req.finish_reason == "error":
            return error(
                500, "The engine could not schedule the request (KV cache too small).", "InternalServerError"
            )
        reasoning, content = self._sections(0, req.generated)
        body: dict[str, Any] = {"id": req.request_id, "created": self.created, "model": self.model}
        if self.endpoint == CHAT:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": content or None,
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
            }
            calls = self._tool_calls(False)
            message["tool_calls"] = calls or []
            message["reasoning"] = reasoning or None
            message["reasoning_content"] = reasoning or None
            choice = {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": self._finish_reason(),
                "stop_reason": None,
            }
            body |= {"object": "chat.completion", "choices": [choice]}
        else:
            body |= {
                "object": "text_completion",
                "choices": [
                    {
                        "index": 0,
                        "text": content,
                        "logprobs": None,
                        "finish_reason": req.finish_reason,
                        "stop_reason": None,
                        "prompt_logprobs": None,
                    }
                ],
            }
        body |= {
            "service_tier": None,
            "system_fingerprint": None,
            "usage": usage(req, self.sim.config.enable_prompt_tokens_details),
            "prompt_logprobs": None,
            "kv_transfer_params": None,
        }
        if self.sim.config.enable_per_request_metrics:
            body["metrics"] = per_request_metrics(req)
        self.sim.count_parser(self.endpoint, False, self._tool_calls(False) is not None, self.parsed)
        return JSONResponse(body)

    async def frames(self) -> AsyncIterator[bytes]:
        """The stream's bytes, one batch per engine step (all frames of a step go in one write)."""
        req, chunks, stalled = self.req, 0, False
        cut = self.faults.midstream_disconnect
        while True:
            done = await req.events.get()
            if req.finish_reason in ("abort", "error") and done:
                if req.finish_reason == "error":
                    yield sse(
                        {"error": {"message": "engine error", "type": "InternalServerError", "code": 500}}
                    )
                return
            batch = self._delta_frames(done)
            if cut is not None and chunks + len(batch) > cut:
                if cut > chunks:
                    req.writes.append((time.monotonic(), req.generated))
                    yield b"".join(batch[: cut - chunks])
                self.sim.engine.abort(req)
                raise StreamCut
            chunks += len(batch)
            if done:
                req.writes.append((time.monotonic(), req.generated))
                yield b"".join(batch) + self._tail()
                return
            if batch:
                req.writes.append((time.monotonic(), req.generated))
                yield batch[0] if len(batch) == 1 else b"".join(batch)
                if self.faults.stream_stall and chunks >= STALL_AFTER_CHUNKS and not stalled:
                    stalled = True  # the engine keeps going; this stream's bytes wait
                    await asyncio.sleep(self.faults.stream_stall)

    def _tail(self) -> bytes:
        """The usage chunk (when asked for) and ``[DONE]``."""
        if not self.parsed.include_usage:
            return DONE
        req = self.req
        tail: dict[str, Any] = {
            "id": req.request_id,
            "object": self._object(),
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage(req, self.sim.config.enable_prompt_tokens_details),
        }
        if self.sim.config.enable_per_request_metrics:
            tail["metrics"] = per_request_metrics(req)
        return sse(tail) + DONE

    def _object(self) -> str:
        return "chat.completion.chunk" if self.endpoint == CHAT else "text_completion"

    def _head(self) -> bytes:
        """The serialised start of every chunk of this stream, up to the choice (built once)."""
        if self._chunk_head is None:
            self._chunk_head = (
                f'data: {{"id":{_dumps(self.req.request_id)},"object":{_dumps(self._object())},'
                f'"created":{self.created},"model":{_dumps(self.model)},"choices":[{{"index":0,'
            ).encode()
        return self._chunk_head

    def _chunk(self, payload: dict[str, Any], finish: str | None) -> bytes:
        """One ``data:`` frame; byte for byte what ``sse()`` of the nested chunk dict gives."""
        end = b',"logprobs":null,"finish_reason":null}]}\n\n'
        if finish is not None:
            end = (
                b',"logprobs":null,"finish_reason":' + _dumps(finish).encode() + b',"stop_reason":null}]}\n\n'
            )
        if self.endpoint == CHAT:
            if len(payload) == 1 and "content" in payload:
                body = '"delta":{"content":' + _dumps(payload["content"]) + "}"
            else:
                body = '"delta":' + _dumps(payload)
        else:
            body = '"text":' + _dumps(payload.get("content", ""))
        return self._head() + body.encode() + end

    def _delta_frames(self, done: bool) -> list[bytes]:
        req, out = self.req, []
        if self.sent == 0 and self.endpoint == CHAT:
            out.append(self._chunk({"role": "assistant", "content": ""}, None))
        reasoning, content = self._sections(self.sent, req.generated)
        self.sent = req.generated
        if reasoning:
            out.append(self._chunk({"reasoning": reasoning, "reasoning_content": reasoning}, None))
        if content:
            out.append(self._chunk({"content": content}, None))
        calls = self._tool_calls(True)
        if calls is not None and done:
            out.append(self._chunk({"tool_calls": calls}, None))
        self.sim.count_parser(self.endpoint, True, calls is not None and done, self.parsed)
        if done:
            out.append(self._chunk({"content": ""}, self._finish_reason()))
        return out


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
