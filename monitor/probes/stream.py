"""Server-sent events, decoded incrementally and timestamped on the monotonic clock.

:class:`SseDecoder` turns byte chunks as they come off the socket into complete events; each
event carries the monotonic time at which the bytes completing it arrived. :func:`sse_events`
runs the decoder over a recorded byte stream (tests, replays) and :func:`aiter_sse` over a live
``httpx`` response. An event cut off by the end of the stream is never yielded; the decoder's
:attr:`SseDecoder.pending` says how many bytes were left over.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass

import httpx

from monitor.probes.wire import arrival_of

DONE = "[DONE]"


@dataclass(frozen=True)
class SseEvent:
    """One complete SSE event: its ``data`` lines joined by newlines."""

    at: float  # monotonic seconds when the event's last byte arrived
    data: str
    event: str | None = None

    @property
    def is_done(self) -> bool:
        return self.data.strip() == DONE


class SseDecoder:
    """Incremental SSE decoder (WHATWG event-stream rules for ``data:``/``event:``/comments)."""

    def __init__(self) -> None:
        self._buf = b""

    @property
    def pending(self) -> int:
        """Bytes received that do not (yet) form a complete event."""
        return len(self._buf.strip())

    def feed(self, at: float, chunk: bytes) -> Iterator[SseEvent]:
        """Add ``chunk`` (arrived at ``at``) and yield every event it completes."""
        self._buf = (self._buf + chunk).replace(b"\r\n", b"\n")
        while True:
            end = self._buf.find(b"\n\n")
            if end < 0:
                return
            block, self._buf = self._buf[:end], self._buf[end + 2 :]
            event = _parse_block(at, block.decode("utf-8", errors="replace"))
            if event is not None:
                yield event


def _parse_block(at: float, block: str) -> SseEvent | None:
    data: list[str] = []
    name: str | None = None
    for line in block.split("\n"):
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if not data:
        return None
    return SseEvent(at=at, data="\n".join(data), event=name)


def sse_events(chunks: Iterable[tuple[float, bytes]]) -> Iterator[SseEvent]:
    """Events of a recorded stream given as ``(arrival time, bytes)`` pairs."""
    decoder = SseDecoder()
    for at, chunk in chunks:
        yield from decoder.feed(at, chunk)


async def aiter_sse(
    response: httpx.Response,
    decoder: SseDecoder | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[SseEvent]:
    """Events of a live streaming response, each stamped when its bytes arrived.

    The stamp is the connection's arrival stamp (:func:`monitor.probes.wire.arrival_of`: the
    kernel's receive time on a :func:`~monitor.probes.wire.probe_client`), else ``clock()`` as
    soon as httpx hands over the bytes.
    """
    decoder = decoder if decoder is not None else SseDecoder()
    async for chunk in response.aiter_bytes():
        arrived = arrival_of(response)
        now = arrived if arrived is not None else clock()
        for event in decoder.feed(now, chunk):
            yield event
