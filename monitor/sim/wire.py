"""The simulator's HTTP protocol: uvicorn's httptools protocol plus a receipt timestamp per request.

``received`` in ``/sim/truth`` is the ``time.monotonic()`` at which the server parsed the start of
the request, inside the socket read callback. It is the like-for-like counterpart of a client's
"request sent" time: ``arrival`` (when the request handler starts) comes later by whatever the
server's event loop had queued ahead of it, e.g. the other requests of a burst. The stamp is put in
the ASGI scope's ``extensions`` under :data:`RECEIVED`.
"""

from __future__ import annotations

import time

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

RECEIVED = "m3mon.received"


class StampingHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that records when each request's first bytes were parsed."""

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {**self.scope.get("extensions", {}), RECEIVED: {"at": time.monotonic()}}
