"""Small loopback HTTP servers for the end-to-end suite: webhook capture and hostile /metrics pages.

Both run a :class:`http.server.ThreadingHTTPServer` in a daemon thread on a free 127.0.0.1 port
and are context managers that always shut the server down.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    """A ThreadingHTTPServer in a thread; subclasses provide the handler class."""

    handler: type[BaseHTTPRequestHandler]

    def __enter__(self) -> _Server:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1})
        self.thread.daemon = True
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class _CaptureHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner: Capture = self.server.owner  # type: ignore[attr-defined]
        with owner.lock:
            owner.posts.setdefault(self.path, []).append(json.loads(body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class Capture(_Server):
    """Records every JSON body POSTed to it, by path (Alertmanager's pager and chat webhooks)."""

    handler = _CaptureHandler

    def __init__(self) -> None:
        self.posts: dict[str, list[dict[str, Any]]] = {}
        self.lock = threading.Lock()

    def alerts(self, path: str) -> list[dict[str, Any]]:
        """Every alert of every webhook received on ``path``, in order of arrival."""
        with self.lock:
            return [a for body in self.posts.get(path, []) for a in body.get("alerts", [])]


#: A page the collector must reject as garbled: a sample line that is not a sample.
GARBLED = (
    b'# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m" 1\n\x00\xff junk\n'
)
#: Size of the "huge" page: just above the collector's 16 MiB cap.
HUGE_BYTES = 17 * 1024 * 1024


class _BadMetricsHandler(BaseHTTPRequestHandler):
    """``/garbled/metrics``, ``/huge/metrics`` (streams past the cap), ``/slow/metrics`` (drips);
    404 for anything else (probes sent here fail fast)."""

    def do_GET(self) -> None:
        owner: BadMetrics = self.server.owner  # type: ignore[attr-defined]
        try:
            if self.path == "/garbled/metrics":
                self._send(GARBLED)
            elif self.path == "/huge/metrics":
                self._stream(b"# HELP x " + b"x" * 65000 + b"\n", HUGE_BYTES, 0.0, owner)
            elif self.path == "/slow/metrics":
                self._stream(b"# HELP vllm:slow a page that never ends\n", HUGE_BYTES, 0.5, owner)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the collector gave up, as it should

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, chunk: bytes, total: int, pause: float, owner: BadMetrics) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()  # no Content-Length: the size is only known by reading
        self.close_connection = True
        sent = 0
        while sent < total and not owner.closing.is_set():
            self.wfile.write(chunk)
            sent += len(chunk)
            if pause:
                time.sleep(pause)

    def log_message(self, *args: Any) -> None:
        pass


class BadMetrics(_Server):
    """An 'endpoint' whose /metrics page is garbled, huge or slow, selected by path prefix."""

    handler = _BadMetricsHandler

    def __init__(self) -> None:
        self.closing = threading.Event()

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        super().__exit__(*exc)
