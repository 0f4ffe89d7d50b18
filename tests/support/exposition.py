"""A /metrics page served on a free loopback port, for a real Prometheus (or vmalert) to scrape.

``serving(page)`` answers every GET with ``page()`` (called per scrape, so the page can change)
and every POST with 200, dropping the body (vmalert posts its notifications to the URL it is
given as its Alertmanager). The server thread is always stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any


@contextmanager
def serving(page: Callable[[], bytes]) -> Iterator[str]:
    """Yield ``127.0.0.1:PORT`` while ``page()`` is served there."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
