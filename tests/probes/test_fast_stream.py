"""A stream that arrives faster than the probe reads it: the reader still gives the event loop its turn.

A probe reads its answer through :class:`monitor.probes.wire.StampedStream`, which returns at once
when bytes are waiting in the socket. A server that outpaces the client (a real vLLM streaming
~450 chunks a second to a busy 2-core machine did) always has bytes waiting, so a read loop that
never suspends holds the event loop for the whole answer: the probe's own timeout cannot fire (a
1 s probe ran 5.5 s and came back ``truncated``), and the exporter, the other probes and the
store's writes wait. The server here writes chunks as fast as its socket takes them, from a thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.model import load_model
from monitor.probes.result import ProbeResult
from monitor.probes.runner import plan_round, run_probe
from monitor.probes.wire import probe_client
from tests.probes.conftest import write_config

pytestmark = pytest.mark.timeout(60)

#: The probe's timeout, and how long the server keeps writing (several times longer).
TIMEOUT = 0.5
FLOOD_SECONDS = 6.0
_CHUNK = (
    b'data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
    b'"delta":{"content":"tok "},"finish_reason":null}],"usage":{"prompt_tokens":9,'
    b'"completion_tokens":1,"total_tokens":10}}\n\n'
)
_FRAME = f"{len(_CHUNK):x}\r\n".encode() + _CHUNK + b"\r\n"


def _flood(conn: socket.socket, stop: threading.Event) -> None:
    with conn:
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += conn.recv(65536)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        until = time.monotonic() + FLOOD_SECONDS
        try:
            while time.monotonic() < until and not stop.is_set():
                conn.sendall(_FRAME * 64)
            conn.sendall(b"0\r\n\r\n")
        except OSError:
            return  # the client hung up: what a cut probe does


@pytest.fixture
def flooding_server() -> Iterator[str]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)  # accept() wakes to see the stop
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=_flood, args=(conn, stop), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


async def _probe_with_ticker(base_url: str, path: Path) -> tuple[ProbeResult, float, int]:
    model = load_model(write_config(path, base_url, timeout="30s", kinds="[chat]"))
    (p,) = plan_round(model, kinds=["chat"])
    cut = dataclasses.replace(
        p, spec=dataclasses.replace(p.spec, plan=dataclasses.replace(p.spec.plan, timeout=TIMEOUT))
    )
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    t0 = time.monotonic()
    async with probe_client() as client:
        result = await run_probe(cut, client)
    elapsed = time.monotonic() - t0
    tick_task.cancel()
    return result, elapsed, ticks


def test_a_stream_faster_than_the_reader_is_still_cut_by_the_timeout(
    flooding_server: str, tmp_path: Path
) -> None:
    result, elapsed, ticks = asyncio.run(_probe_with_ticker(flooding_server, tmp_path / "monitor.yaml"))
    assert result.reason == "timeout", (result.reason, result.detail, elapsed)
    # Cut when its timeout expired, not when the server stopped writing (FLOOD_SECONDS later).
    assert elapsed < FLOOD_SECONDS / 2, elapsed
    # Other work on the loop ran while the answer streamed in (a 10 ms ticker, over half a second).
    assert ticks >= 5, ticks
