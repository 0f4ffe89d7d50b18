"""Many simulated vLLM endpoints from one small process: ``python bench/sims.py N``.

Serves N independent simulators (each its own :class:`~monitor.sim.simulator.Simulator`, metrics
and engine, seeded ``0..N-1``) on N free 127.0.0.1 ports, all on one asyncio loop in one thread,
prints their base URLs as one JSON line, and serves until SIGTERM or SIGINT, then stops every
server. One loop instead of one server thread per endpoint (as
:func:`monitor.sim.harness.running_simulator` runs them) keeps the load generator to a fraction
of a core at 200 endpoints, so the monitor it drives is not starved on a small machine.

The only difference from ``m3mon sim``: the simulator's event-loop lag probe (a wake-up every
5 ms, for ``/sim/stats``) is not run, since 200 of them would cost the process more than the
traffic; the bench never reads it. uvicorn's own signal handlers are off: this script stops all
servers on the first SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.sim.app import build_app
from monitor.sim.config import SimConfig
from monitor.sim.simulator import Simulator
from monitor.sim.wire import StampingHttpToolsProtocol


class _BenchSimulator(Simulator):
    """A simulator without the 5 ms lag probe (see the module docstring)."""

    async def _measure_lag(self) -> None:
        await asyncio.Event().wait()


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: N servers share one process's signals."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _server(seed: int) -> tuple[uvicorn.Server, socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sim = _BenchSimulator(SimConfig().with_overrides(host="127.0.0.1", port=port, seed=seed))
    config = uvicorn.Config(build_app(sim), http=StampingHttpToolsProtocol, log_level="warning",
                            access_log=False, lifespan="on", timeout_graceful_shutdown=2)  # fmt: skip
    return _Server(config), sock


async def serve(n: int) -> None:
    servers = [_server(i) for i in range(n)]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(server.serve(sockets=[sock])) for server, sock in servers]
    try:
        while not all(server.started for server, _ in servers):
            if any(task.done() for task in tasks):
                raise SystemExit("a simulator did not start")
            await asyncio.sleep(0.05)
        urls = [f"http://127.0.0.1:{sock.getsockname()[1]}" for _, sock in servers]
        print(json.dumps(urls), flush=True)
        await stop.wait()
    finally:
        for server, _ in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
        for _, sock in servers:
            sock.close()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
