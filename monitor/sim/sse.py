"""A raw ASGI server-sent-events response that can also drop the connection on purpose.

Starlette's ``StreamingResponse`` always completes the response; the ``midstream_disconnect``
fault needs the opposite, so this class sends the chunks itself and, when the stream is cut,
returns without the final empty body - the server then closes the connection mid-body, which a
client sees as a broken stream. A watcher task turns the client's ``http.disconnect`` into a
callback (the engine aborts the request).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from starlette.types import Receive, Scope, Send


class StreamCut(Exception):
    """Raised by a chunk generator to drop the connection instead of finishing the response."""


class SSEResponse:
    """``text/event-stream`` response fed by an async iterator of ready-made ``data:`` frames."""

    def __init__(self, frames: AsyncIterator[bytes], on_disconnect: Callable[[], None]) -> None:
        self.frames = frames
        self.on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watcher = asyncio.ensure_future(self._watch(receive))
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8")],
                }
            )
            async for frame in self.frames:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except StreamCut:
            return
        except OSError:
            self.on_disconnect()
        finally:
            watcher.cancel()

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.on_disconnect()
                return
