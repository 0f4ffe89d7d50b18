"""One timed streaming chat request: transport outcome, phase times and the folded stream.

:func:`stream_chat` POSTs a chat-completions body with ``stream: true``, timestamps the httpx
connection phases through the ``trace`` request extension, reads the SSE stream into a
:class:`~monitor.probes.transcript.Transcript` and classifies transport failures
(``connect_error``, ``timeout``, ``http_status``, ``context_rejected``, ``stream_broken``). It
never raises for a failing server; judging the answer is left to :mod:`monitor.probes.judge`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from monitor.probes.progress import note_request
from monitor.probes.result import Timings
from monitor.probes.stream import SseDecoder, aiter_sse
from monitor.probes.target import Target
from monitor.probes.timing import timings_for
from monitor.probes.tracing import trace_headers
from monitor.probes.transcript import Transcript
from monitor.web.body import BodyTooLarge, read_capped

#: An error answer is a short JSON object; a body beyond this is not read at all.
ERROR_BODY_MAX = 64 * 1024

#: Response headers a retry policy reads (openai-python's ``_base_client.py``).
RETRY_HEADERS = ("retry-after-ms", "retry-after", "x-should-retry")

#: Phrases by which vLLM/SGLang/OpenAI say a prompt exceeds the context window (HTTP 400).
CONTEXT_PHRASES = ("context length", "context_length", "maximum context", "max_model_len", "too long")


@dataclass
class Exchange:
    """What happened to one streamed request."""

    started: float  # monotonic, before the request was handed to httpx
    sent: float  # monotonic, request body about to be written (``started`` if the trace did not say)
    end: float  # monotonic, stream finished or failed
    transcript: Transcript = field(default_factory=Transcript)
    status: int | None = None
    connect: float | None = None
    headers: float | None = None
    failure: str | None = None  # a transport-level failure category
    detail: str = ""
    leftover_bytes: int = 0  # bytes of an event cut off by the end of the stream
    #: an error answer's ``retry-after-ms`` / ``retry-after`` and ``x-should-retry`` headers
    retry_headers: dict[str, str] = field(default_factory=dict)
    #: with retries (:mod:`monitor.probes.retry`): when the first attempt was sent, and why each
    #: earlier attempt was retried; this exchange is the final attempt
    first_sent: float | None = None
    retries: tuple[str, ...] = ()

    def timings(self) -> Timings:
        return timings_for(
            self.transcript, self.sent, self.end, self.connect, self.headers, self.first_sent, self.retries
        )


class _PhaseClock:
    """Async ``trace`` extension callback recording when connection phases happen."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}

    async def __call__(self, name: str, info: dict[str, Any]) -> None:
        self.marks.setdefault(name.split(".", 1)[-1], time.monotonic())

    def span(self, start: str, end: str) -> float | None:
        a, b = self.marks.get(start), self.marks.get(end)
        return b - a if a is not None and b is not None else None


#: The sampling every probe asks for (one setting, so the kinds' answers are comparable).
SAMPLING: dict[str, float] = {"temperature": 1.0, "top_p": 0.95}
#: The chat template's switch for an answer without a reasoning block.
NO_THINKING: dict[str, Any] = {"chat_template_kwargs": {"thinking_mode": "disabled"}}


def chat_body(target: Target, messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    """A streaming chat-completions body for ``target`` with usage reported per chunk and at the end."""
    body: dict[str, Any] = {"model": target.model, "messages": messages, "stream": True}
    body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    body.update(params)
    return body


async def stream_chat(client: httpx.AsyncClient, target: Target, body: dict[str, Any],
                      timeout: float) -> Exchange:  # fmt: skip
    """Send ``body`` to ``target`` and read the whole stream (bounded by ``timeout`` per phase)."""
    phases = _PhaseClock()
    headers = {**target.endpoint.headers(), **trace_headers(), "Accept": "text/event-stream"}
    request = client.build_request(
        "POST", target.chat_url, json=body, headers=headers,
        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), extensions={"trace": phases},
    )  # fmt: skip
    started = time.monotonic()
    ex = Exchange(started=started, sent=started, end=started)
    note_request(ex)
    try:
        response = await client.send(request, stream=True)
    except httpx.TimeoutException as exc:
        return _fail(ex, "connect_error" if isinstance(exc, httpx.ConnectTimeout) else "timeout", exc)
    except (httpx.ConnectError, httpx.UnsupportedProtocol) as exc:
        return _fail(ex, "connect_error", exc)
    except httpx.TransportError as exc:
        return _fail(ex, "stream_broken", exc)
    # The mark before the body is written, not after: the first token's kernel arrival stamp can
    # precede a mark taken after the write when this process is descheduled in between (seen
    # against a real vLLM on a loaded 2-core machine: TTFT came out 0). Loopback writes of a
    # request body take microseconds, so this costs no accuracy.
    ex.sent = phases.marks.get("send_request_body.started", started)
    ex.connect = phases.span("connect_tcp.started", "connect_tcp.complete")
    tls = phases.span("start_tls.started", "start_tls.complete")
    ex.connect = ex.connect + tls if ex.connect is not None and tls is not None else ex.connect
    ex.headers = time.monotonic() - ex.sent
    ex.status = response.status_code
    try:
        if response.status_code != 200:
            return await _http_failure(ex, response)
        decoder = SseDecoder()
        async for event in aiter_sse(response, decoder):
            ex.transcript.add(event)
        ex.leftover_bytes = decoder.pending
    except httpx.TimeoutException as exc:
        return _fail(ex, "timeout", exc)
    except httpx.TransportError as exc:
        return _fail(ex, "stream_broken", exc)
    finally:
        await response.aclose()
    # A complete stream ends when its last event arrived (the kernel's stamp, as every chunk's),
    # as vllm bench serve's e2el ends at its most recent chunk: not when this coroutine got to run
    # again (1.66 s late once, in a busy probe round) nor when the server got round to closing.
    done = ex.transcript.done and ex.transcript.last_at is not None
    ex.end = max(ex.transcript.last_at or ex.sent, ex.sent) if done else time.monotonic()
    return ex


def _fail(ex: Exchange, reason: str, exc: Exception) -> Exchange:
    ex.end = time.monotonic()
    ex.failure = reason
    ex.detail = f"{type(exc).__name__}: {exc}"[:200]
    return ex


async def _error_text(response: httpx.Response) -> str:
    """The first 2,000 bytes of an error body, read through the shared capped reader."""
    declared = response.headers.get("content-length") if "content-encoding" not in response.headers else None
    try:
        body = await read_capped(response.aiter_bytes(), ERROR_BODY_MAX, declared)
    except BodyTooLarge as exc:
        return f"error body not read: {exc}"
    return body[:2000].decode("utf-8", errors="replace")


async def _http_failure(ex: Exchange, response: httpx.Response) -> Exchange:
    ex.retry_headers = {h: response.headers[h] for h in RETRY_HEADERS if h in response.headers}
    raw = await _error_text(response)
    ex.end = time.monotonic()
    message = raw
    try:
        payload = json.loads(raw)
        err = payload.get("error", payload) if isinstance(payload, dict) else payload
        message = str(err.get("message", err) if isinstance(err, dict) else err)
    except json.JSONDecodeError:
        pass
    lowered = message.lower()
    context = response.status_code in (400, 413) and any(p in lowered for p in CONTEXT_PHRASES)
    ex.failure = "context_rejected" if context else "http_status"
    ex.detail = f"HTTP {response.status_code}: {message}"[:200]
    return ex
