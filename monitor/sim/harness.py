"""Run a simulator in the background for tests: :func:`running_simulator`.

Usage (probe, collector and service tests)::

    from monitor.sim.harness import running_simulator

    with running_simulator(decode_itl=0.005, startup_delay=0.0) as sim:
        httpx.get(f"{sim.base_url}/health")                       # 200
        openai.OpenAI(base_url=f"{sim.base_url}/v1", api_key="x")  # the real client works
        sim.sim.faults                                            # the in-process Simulator
        sim.set_faults(midstream_disconnect=3)                    # thread-safe fault switch
        sim.truth()                                               # ground truth (same as GET /sim/truth)

The server runs uvicorn on 127.0.0.1 at a free port in a daemon thread with its own event loop;
leaving the ``with`` block stops it and joins the thread (bounded by ``stop_timeout``). Keyword
overrides are :class:`monitor.sim.config.SimConfig` fields (``faults`` may be a dict). Times in
ground truth are ``time.monotonic()`` seconds - the same clock as the test process, since the
server runs in-process.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import uvicorn

from monitor.sim.app import build_app
from monitor.sim.config import SimConfig
from monitor.sim.faults import Faults, parse_faults
from monitor.sim.simulator import Simulator
from monitor.sim.wire import StampingHttpToolsProtocol

T = TypeVar("T")


@dataclass
class SimHandle:
    """A running simulator: where it listens and the in-process :class:`Simulator`."""

    base_url: str
    port: int
    sim: Simulator
    loop: asyncio.AbstractEventLoop

    def call(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        """Run ``fn`` on the server's event loop and return its result (thread-safe)."""

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def set_faults(self, **update: Any) -> Faults:
        """Merge fault keys (``restart=True`` restarts), as ``POST /sim/faults`` does."""
        return self.call(lambda: self.sim.update_faults(update))

    def clear_faults(self) -> None:
        self.call(lambda: setattr(self.sim, "faults", Faults()))

    def truth(self) -> dict[str, Any]:
        return self.call(self.sim.truth)


@contextmanager
def running_simulator(
    config: SimConfig | None = None, *, stop_timeout: float = 10.0, port: int = 0, **overrides: Any
) -> Iterator[SimHandle]:
    """Start a simulator on 127.0.0.1 at ``port`` (0: a free one), yield its handle, always stop it.
    A taken ``port`` raises OSError before anything starts."""
    if isinstance(overrides.get("faults"), dict | str):
        overrides["faults"] = parse_faults(overrides["faults"])
    cfg = (config or SimConfig()).with_overrides(host="127.0.0.1", **overrides)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    port = int(sock.getsockname()[1])
    cfg = cfg.with_overrides(port=port)
    ready = threading.Event()
    box: dict[str, Any] = {}

    def serve() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        sim = Simulator(cfg)
        server = uvicorn.Server(
            uvicorn.Config(
                build_app(sim),
                http=StampingHttpToolsProtocol,
                log_level="warning",
                access_log=False,
                lifespan="on",
                timeout_graceful_shutdown=2,
            )
        )
        box.update(sim=sim, server=server, loop=loop)

        async def main() -> None:
            task = asyncio.create_task(server.serve(sockets=[sock]))
            while not server.started and not task.done():
                await asyncio.sleep(0.005)
            ready.set()
            await task

        try:
            loop.run_until_complete(main())
        except BaseException as exc:
            box["error"] = exc
        finally:
            ready.set()
            loop.close()

    thread = threading.Thread(target=serve, name=f"m3mon-sim-{port}", daemon=True)
    thread.start()
    try:
        if not ready.wait(stop_timeout) or "error" in box:
            raise RuntimeError(f"simulator did not start: {box.get('error')!r}")
        yield SimHandle(f"http://127.0.0.1:{port}", port, box["sim"], box["loop"])
    finally:
        if "server" in box:
            box["server"].should_exit = True
        thread.join(stop_timeout)
        sock.close()
