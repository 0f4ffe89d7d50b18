"""Fetching over HTTP from a tiny local server: auth, gzip, size cap, timeouts, status and connect errors."""

from __future__ import annotations

import asyncio
import gzip
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from monitor.errors import ScrapeError
from monitor.model import Endpoint
from monitor.scrape.collector import collect, fingerprint
from tests.scrape.conftest import page_text

PAGE = page_text("vllm-0.13.0.metrics.txt").encode()
Handler = Callable[[str, dict[str, str], asyncio.StreamWriter], Awaitable[None]]
pytestmark = pytest.mark.timeout(30)


@asynccontextmanager
async def server(handler: Handler) -> AsyncIterator[str]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await reader.readuntil(b"\r\n\r\n")).decode()
            first, *rest = request.split("\r\n")
            headers = {k.lower(): v for k, _, v in (h.partition(": ") for h in rest if h)}
            await handler(first.split()[1], headers, writer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    srv = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.close()
        await srv.wait_closed()


def respond(status: int, body: bytes, extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
    return head.encode() + body


def endpoint(url: str, key_env: str | None = None) -> Endpoint:
    return Endpoint("ep", url, "vllm", "MiniMaxAI/MiniMax-M3", ("c",), 15.0, api_key_env=key_env)


async def scrape(handler: Handler, **kw: float) -> object:
    async with server(handler) as url, httpx.AsyncClient() as client:
        return await collect(endpoint(url), client, None, **kw)  # type: ignore[arg-type]


async def error_of(handler: Handler, **kw: float) -> str:
    with pytest.raises(ScrapeError) as err:
        await scrape(handler, **kw)
    return err.value.reason


def test_gzip_and_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("M3_TEST_KEY", "s3cret")
    seen: dict[str, str] = {}

    async def handler(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        seen.update(headers, path=path)
        if path == "/version":
            w.write(respond(200, b'{"version": "0.13.0"}'))
        elif path == "/v1/models":
            w.write(respond(200, b'{"data": [{"id": "MiniMaxAI/MiniMax-M3", "max_model_len": 131072}]}'))
        else:
            w.write(respond(200, gzip.compress(PAGE), "Content-Encoding: gzip\r\n"))

    async def go() -> None:
        async with server(handler) as url, httpx.AsyncClient() as client:
            ep = endpoint(url, "M3_TEST_KEY")
            reading, sig = await collect(ep, client, None)
            assert seen["authorization"] == "Bearer s3cret" and "gzip" in seen["accept-encoding"]
            assert sig.total.requests == 200
            fp = await fingerprint(ep, client, reading)
            assert (fp.version, fp.max_model_len, fp.block_size, fp.num_gpu_blocks) == (
                "0.13.0",
                131072,
                128,
                1410,
            )
            assert fp.block_size_ok and fp.cache_dtype == "auto" and fp.enable_prefix_caching is True

    asyncio.run(go())


def test_http_status() -> None:
    async def handler(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        w.write(respond(503, b"starting"))

    assert asyncio.run(error_of(handler)) == "http_status"


def test_too_large_is_stopped_while_streaming() -> None:
    async def handler(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        chunk = b"# " + b"x" * 4094 + b"\n"
        for _ in range(64):
            w.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await w.drain()
        w.write(b"0\r\n\r\n")

    assert asyncio.run(error_of(handler, max_bytes=10_000)) == "too_large"


def test_gzip_bomb_is_capped_after_decoding() -> None:
    async def handler(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        w.write(respond(200, gzip.compress(b"#" * 2_000_000), "Content-Encoding: gzip\r\n"))

    assert asyncio.run(error_of(handler, max_bytes=100_000)) == "too_large"


def test_slow_server_times_out_within_the_deadline() -> None:
    async def handler(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(50):  # drips a byte every 0.1 s: never idle long, never done
            w.write(b"1\r\n#\r\n")
            await w.drain()
            await asyncio.sleep(0.1)

    start = time.monotonic()
    assert asyncio.run(error_of(handler, timeout=0.5)) == "timeout"
    assert time.monotonic() - start < 4.0


def test_cut_off_body_is_truncated() -> None:
    async def handler(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + PAGE[:5000])

    assert asyncio.run(error_of(handler)) == "truncated"


def test_garbled_body() -> None:
    async def handler(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        w.write(respond(200, b"\xff\xfe not text\n"))

    assert asyncio.run(error_of(handler)) == "garbled"


def test_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go() -> str:
        async with httpx.AsyncClient() as client:
            with pytest.raises(ScrapeError) as err:
                await collect(endpoint(f"http://127.0.0.1:{port}"), client, None, timeout=2.0)
            return err.value.reason

    assert asyncio.run(go()) == "connect_error"


def test_one_slow_endpoint_does_not_block_another() -> None:
    async def slow(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        await asyncio.sleep(1.5)
        w.write(respond(200, PAGE))

    async def fast(path: str, headers: dict[str, str], w: asyncio.StreamWriter) -> None:
        w.write(respond(200, PAGE))

    async def go() -> None:
        async with server(slow) as u1, server(fast) as u2, httpx.AsyncClient() as client:
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            fast_task = asyncio.create_task(collect(endpoint(u2), client, None))
            slow_task = asyncio.create_task(collect(endpoint(u1), client, None, timeout=0.5))
            await fast_task
            assert loop.time() - t0 < 0.5
            with pytest.raises(ScrapeError):
                await slow_task

    asyncio.run(go())
