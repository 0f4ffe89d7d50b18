"""A hostile 'endpoint' for the live service tests: its chat stream ends with a ``finish_reason``
of 41 characters, one of the poison inputs found in the field (``probe_results.finish_reason`` is
``String(40)``, so PostgreSQL refuses the probe's row). ``/metrics`` and ``/health`` are 404.

A :class:`http.server.ThreadingHTTPServer` in a daemon thread on a free 127.0.0.1 port; the
context manager always shuts it down. ``chats`` counts the chat requests it answered.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

POISON_FINISH_REASON = "x" * 41
MODEL = "MiniMaxAI/MiniMax-M3"


def _chunk(delta: dict[str, Any], finish: str | None, usage: dict[str, int] | None = None) -> bytes:
    doc: dict[str, Any] = {"id": "chatcmpl-poison", "object": "chat.completion.chunk", "model": MODEL,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
    if usage is not None:
        doc["usage"] = usage
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.endswith("/chat/completions"):
            return self._empty(404)
        usage = {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}
        body = (_chunk({"role": "assistant", "content": ""}, None) + _chunk({"content": "Paris is"}, None)
                + _chunk({"content": " nice."}, POISON_FINISH_REASON, usage) + b"data: [DONE]\n\n")  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.chats += 1  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self._empty(404)

    def _empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class PoisonEndpoint:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def chats(self) -> int:
        return int(self.server.chats)  # type: ignore[attr-defined]


@contextmanager
def poison_endpoint() -> Iterator[PoisonEndpoint]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.chats = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield PoisonEndpoint(server)
    finally:
        server.shutdown()
        server.server_close()
