"""A TCP proxy on loopback that a test can break: every connection dropped, or every answer late.

``flaky_proxy(host, port)`` forwards 127.0.0.1:PROXY to the upstream (an HTTP server, a
PostgreSQL cluster). ``proxy.fail(True)`` closes every open connection and every one accepted
until ``fail(False)`` (what a replica sees when its path to an endpoint or to the database
breaks); ``proxy.delay = s`` holds each chunk from upstream for ``s`` seconds (a slow path). The
proxy runs its own event loop in a daemon thread and is always stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class FlakyProxy:
    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.delay = 0.0
        self.failing = False
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._open: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self.dropped = 0  # connections closed because of fail()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, slow: bool) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while chunk := await reader.read(65536):
                if slow and self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(chunk)
                await writer.drain()
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.failing:
            self.dropped += 1
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        self._open.update((writer, up_writer))
        try:
            await asyncio.gather(self._pump(reader, up_writer, False), self._pump(up_reader, writer, True))
        finally:
            self._open.difference_update((writer, up_writer))

    def _drop_all(self) -> None:
        for w in list(self._open):
            self.dropped += 1
            with contextlib.suppress(OSError, RuntimeError):
                w.transport.abort()
        self._open.clear()

    def fail(self, on: bool) -> None:
        """Drop every connection now and refuse new ones (``on``), or forward again."""

        def switch() -> None:
            self.failing = on
            if on:
                self._drop_all()

        self.loop.call_soon_threadsafe(switch)

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            self._drop_all()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


@contextmanager
def flaky_proxy(host: str, port: int) -> Iterator[FlakyProxy]:
    proxy = FlakyProxy(host, port)
    thread = threading.Thread(target=proxy.loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(proxy._start(), proxy.loop).result(10)
    try:
        yield proxy
    finally:
        proxy.stop()
        thread.join(10)
        proxy.loop.close()
