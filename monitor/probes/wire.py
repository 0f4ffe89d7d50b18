"""Arrival stamps taken by the kernel: an httpcore network backend for timing probes.

A probe's chunk must be stamped when its bytes reached the machine, not when the client's event
loop got round to it: with many probes in one process, a chunk can wait milliseconds behind other
probes' work. :class:`StampingBackend` opens plain TCP sockets with ``SO_TIMESTAMPNS`` (Linux),
reads them with ``recvmsg`` and keeps, per connection, the kernel's receive time of the last read
(:attr:`StampedStream.arrived`, converted to the monotonic clock). Reads end at SSE event
boundaries, so each event gets the stamp of the segment that completed it. Where the kernel gives no stamp
(another OS, or a TLS connection, which is handed to anyio's stream), the stamp is the monotonic
time at which the read returned, which is still before any HTTP, SSE or JSON parsing.

:func:`probe_client` builds an ``httpx.AsyncClient`` on this backend; :func:`arrival_of` reads
the stamp of a live response's connection (``None`` for a client built without this backend).
Only asyncio event loops (including uvloop) are supported.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
import sys
import time
from collections.abc import Iterable
from typing import Any

import anyio
import httpcore
import httpx
from httpcore._backends.anyio import AnyIOStream

from monitor.origins import OriginPools

#: Linux ``SO_TIMESTAMPNS`` (= ``SCM_TIMESTAMPNS``); the Python ``socket`` module does not define it.
SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@ll")
_ANC_SPACE = socket.CMSG_SPACE(_TIMESPEC.size)
_KERNEL_STAMPS = sys.platform.startswith("linux")

#: How far a read looks ahead for the end of an SSE event (chat chunks are a few hundred bytes).
PEEK_BYTES = 16384

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


def kernel_arrival(ancdata: Iterable[tuple[int, int, bytes]]) -> float | None:
    """The monotonic time of a ``SCM_TIMESTAMPNS`` control message (kernel receive time), if any."""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            offset = time.time_ns() - time.monotonic_ns()  # realtime -> monotonic, read together
            return (int(sec) * 1_000_000_000 + int(nsec) - offset) / 1e9
    return None


class StampedStream(httpcore.AsyncNetworkStream):
    """A plain TCP connection that remembers when the bytes of its last read arrived."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.arrived: float | None = None  # monotonic arrival of the last read's bytes

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                while True:
                    try:
                        data, ancdata, _, _ = self._sock.recvmsg(self._piece(max_bytes), _ANC_SPACE)
                    except (BlockingIOError, InterruptedError):
                        await self._readable()
                        continue
                    stamp = kernel_arrival(ancdata)
                    self.arrived = stamp if stamp is not None else time.monotonic()
                    break
            # The loop's turn, even when bytes were waiting: a server that streams faster than
            # this client reads would otherwise hold the event loop for its whole answer (the
            # probe's own timeout could not fire, nor anything else in the process run).
            await asyncio.sleep(0)
            return data
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def _piece(self, max_bytes: int) -> int:
        """How much to read: up to the first SSE event end waiting in the socket, else all that waits.

        TCP reports the receive stamp of the last segment a read touches, so when the client is
        late and several events wait in the socket, reading them one at a time gives each event
        the stamp of the segment that completed it rather than that of the newest one. The peek
        looks at most :data:`PEEK_BYTES` ahead: a client far behind would otherwise copy its
        whole backlog once per event.
        """
        waiting = self._sock.recv(min(max_bytes, PEEK_BYTES), socket.MSG_PEEK)
        end = waiting.find(b"\n\n")
        if end < 0:  # no event end yet: only what was peeked, not segments that came since
            return max(len(waiting), 1)
        end += 2
        return end + 2 if waiting[end : end + 2] == b"\r\n" else end  # keep the chunk's CRLF

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        fd = self._sock.fileno()
        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                await asyncio.get_running_loop().sock_sendall(self._sock, buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    async def aclose(self) -> None:
        self._sock.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:  # fmt: skip
        try:
            plain = await anyio.abc.SocketStream.from_socket(self._sock)
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        return ReadStampedStream(await AnyIOStream(plain).start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "socket":
            return self._sock
        if info in ("client_addr", "server_addr"):
            with contextlib.suppress(OSError):
                return self._sock.getsockname() if info == "client_addr" else self._sock.getpeername()
            return None
        if info == "is_readable":
            return _is_readable(self._sock)
        return None


def _is_readable(sock: socket.socket) -> bool:
    """True when an idle connection has data or EOF waiting (the server closed it)."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True
    return True  # data waiting, or b"" for end of stream


class ReadStampedStream(httpcore.AsyncNetworkStream):
    """Any stream (here TLS) stamped with the monotonic time each read returned."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self.arrived: float | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        self.arrived = time.monotonic()
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:  # fmt: skip
        return ReadStampedStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


_KEEPER: list[socket.socket] = []


def keep_timestamping_enabled() -> None:
    """Hold one socket with receive stamps on for the life of the process.

    Linux switches packet timestamping on system-wide only while some socket asks for it, and
    switching it on is deferred: segments that arrive in that window carry no stamp, and the
    kernel then stamps them when they are *read*. Keeping one socket asking closes the window
    for every later connection (the first connection after start-up included, once this ran).
    """
    if not _KEEPER and hasattr(socket, "SO_TIMESTAMPNS"):
        keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        keeper.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        _KEEPER.append(keeper)


class StampingBackend(httpcore.AsyncNetworkBackend):
    """Opens :class:`StampedStream` connections with kernel receive stamps switched on."""

    def __init__(self) -> None:
        keep_timestamping_enabled()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[SocketOption] | None = None,
                          ) -> httpcore.AsyncNetworkStream:  # fmt: skip
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                error: OSError = OSError(f"no address for {host}")
                for family, kind, proto, _, address in infos:
                    sock = socket.socket(family, kind, proto)
                    try:
                        _prepare(sock, local_address, socket_options or ())
                        await loop.sock_connect(sock, address)
                        return StampedStream(sock)
                    except OSError as exc:
                        sock.close()
                        error = exc
                raise error
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[SocketOption] | None = None,
                                  ) -> httpcore.AsyncNetworkStream:  # fmt: skip
        return await httpcore.AnyIOBackend().connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _prepare(sock: socket.socket, local_address: str | None, options: Iterable[SocketOption]) -> None:
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if _KERNEL_STAMPS:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    for option in options:
        sock.setsockopt(*option)
    if local_address is not None:
        sock.bind((local_address, 0))


def probe_client(
    max_connections: int | None = None, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose connections carry arrival stamps (see :func:`arrival_of`),
    one connection pool per origin (:class:`~monitor.origins.OriginPools`)."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    pools = OriginPools(lambda: StampingTransport(limits, verify))
    return httpx.AsyncClient(transport=pools, limits=limits)


class StampingTransport(httpx.AsyncHTTPTransport):
    """httpx's own HTTP/1.1 transport with its connection pool on :class:`StampingBackend`."""

    def __init__(self, limits: httpx.Limits, verify: ssl.SSLContext | bool = True) -> None:
        super().__init__(verify=verify, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=StampingBackend(),
        )


def arrival_of(response: httpx.Response) -> float | None:
    """The arrival stamp of the last bytes read for ``response``, if its connection keeps one."""
    stream = response.extensions.get("network_stream")
    arrived = getattr(stream, "arrived", None)
    return arrived if isinstance(arrived, float) else None
