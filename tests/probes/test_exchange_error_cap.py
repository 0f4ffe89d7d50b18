"""A probe's error answer is read through the shared capped reader (monitor.web.body): a server that
answers 500 with an endless or a huge declared body cannot hold the probe or fill its memory.

A raw loopback server (a thread per connection) writes the answers; it is always shut down.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from monitor.model import load_model
from monitor.probes.exchange import ERROR_BODY_MAX, Exchange, chat_body, stream_chat
from monitor.probes.target import Target

pytestmark = pytest.mark.timeout(60)
EXAMPLE = Path(__file__).parents[2] / "examples" / "monitor.yaml"
HEAD = b"HTTP/1.1 %d Oops\r\nContent-Type: application/json\r\n"


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.recv(65536)  # the request (small: a chat body)
        kind = self.server.kind  # type: ignore[attr-defined]
        try:
            if kind == "context":
                body = b'{"error": {"message": "This model\'s maximum context length is 32768 tokens"}}'
                self.request.sendall(HEAD % 400 + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            elif kind == "declared":
                self.request.sendall(HEAD % 500 + b"Content-Length: 10000000000\r\n\r\n")
                time.sleep(5)  # sends nothing: reading the body would wait for the timeout
            else:  # "endless": chunks until the client goes away
                self.request.sendall(HEAD % 500 + b"Transfer-Encoding: chunked\r\n\r\n")
                chunk = b"%x\r\n%s\r\n" % (8192, b"x" * 8192)
                for _ in range(1 << 17):  # 1 GiB at most
                    self.request.sendall(chunk)
        except OSError:
            pass


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.kind = request.param  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def _exchange(base_url: str) -> tuple[Exchange, float]:
    model = load_model(EXAMPLE)
    endpoint = dataclasses.replace(model.endpoints[0], base_url=base_url, api_key_env=None)
    target = Target(endpoint, model.classes[0])
    body = chat_body(target, [{"role": "user", "content": "hi"}], max_tokens=4)

    async def go() -> Exchange:
        async with httpx.AsyncClient() as client:
            return await stream_chat(client, target, body, 20.0)

    started = time.monotonic()
    ex = asyncio.run(go())
    return ex, time.monotonic() - started


@pytest.mark.parametrize("server", ["context"], indirect=True)
def test_a_short_error_body_is_still_read_and_classified(server: str) -> None:
    ex, _ = _exchange(server)
    assert ex.failure == "context_rejected" and "maximum context length" in ex.detail, ex.detail


@pytest.mark.parametrize("server", ["declared"], indirect=True)
def test_a_declared_huge_error_body_is_not_waited_for(server: str) -> None:
    ex, took = _exchange(server)
    assert ex.failure == "http_status" and ex.status == 500
    assert (
        ex.detail
        == f"HTTP 500: error body not read: Content-Length 10000000000 exceeds the cap of {ERROR_BODY_MAX} bytes"
    )
    assert took < 4, took  # the server holds the body back for 5 s: nothing of it was awaited


@pytest.mark.parametrize("server", ["endless"], indirect=True)
def test_an_endless_error_body_is_cut_at_the_cap(server: str) -> None:
    ex, took = _exchange(server)
    assert ex.failure == "http_status"
    assert ex.detail == f"HTTP 500: error body not read: body exceeds the cap of {ERROR_BODY_MAX} bytes"
    assert took < 10, took
