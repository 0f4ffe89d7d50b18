"""Simulator capacity: event-loop lag inside one ``m3mon sim`` process under concurrent streams.

Starts the simulator in a subprocess, measures its idle loop lag (baseline), then for each level
(64, 128, 256, 512, 1024) opens that many streaming chat requests of 256 tokens spread over
``--ramp`` seconds and reads the lag the simulator measured itself (a 5 ms periodic timer's
lateness inside the simulator's own loop, ``GET /sim/stats``) in three windows: while the
streams open, while all of them are held (last stream's first chunk -> first stream's end; the
goal is judged here) and while they drain. Prints p50/p99/max per window, the holding p99 ratio
against the idle baseline, and the CPU seconds the simulator and this client spent, then the
highest concurrency whose holding p99 lag, and that of every lower level, stays under 5 ms
(goal: >= 256). Bounded to about two minutes.

The client must not be the bottleneck: it is this separate process, reading the streams with
raw asyncio protocols on uvloop (no HTTP library, no SSE parsing - it only counts ``data:``
frames and waits for the chunked terminator). By default (2+ CPUs) the simulator is pinned to
CPU 0 and the client to the other CPUs, so the client's work does not run on the simulator's core.

    .venv/bin/python bench/sim.py [--no-pin] [--ramp 1.0] [--levels 64,128,256,512,1024]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import time
from typing import Any

LEVELS = (64, 128, 256, 512, 1024)
LAG_LIMIT = 0.005
BUDGET_S = 110.0
MAX_TOKENS = 256
BODY = json.dumps(
    {
        "model": "MiniMaxAI/MiniMax-M3",
        "messages": [{"role": "user", "content": "Write a short paragraph about rivers."}],
        "stream": True,
        "max_tokens": MAX_TOKENS,
        "ignore_eos": True,
        "chat_template_kwargs": {"thinking_mode": "disabled"},
    }
).encode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(port: int, method: str, path: str, body: bytes = b"") -> bytes:
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class _Stream(asyncio.Protocol):
    """One streaming request: counts ``data:`` frames until the chunked body's terminator."""

    def __init__(self, request: bytes, first: asyncio.Future[None], done: asyncio.Future[int]) -> None:
        self.request, self.first, self.done = request, first, done
        self.frames, self.tail = 0, b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        self.frames += data.count(b"data: ")
        if self.frames and not self.first.done():
            self.first.set_result(None)
        self.tail = (self.tail + data)[-16:]
        if self.tail.endswith(b"0\r\n\r\n") and not self.done.done():
            self.done.set_result(self.frames)
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        for fut in (self.first, self.done):
            if not fut.done():
                fut.set_exception(ConnectionError(f"stream cut after {self.frames} frames: {exc}"))


async def _open(port: int) -> tuple[asyncio.Future[None], asyncio.Future[int]]:
    loop = asyncio.get_running_loop()
    first: asyncio.Future[None] = loop.create_future()
    done: asyncio.Future[int] = loop.create_future()
    request = _request(port, "POST", "/v1/chat/completions", BODY)
    try:
        await loop.create_connection(lambda: _Stream(request, first, done), "127.0.0.1", port)
    except OSError as exc:
        for fut in (first, done):
            fut.set_exception(exc)
    return first, done


async def _get(port: int, path: str) -> Any:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_request(port, "GET", path))
    raw = await reader.read()
    writer.close()
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])


def _cpu_of(pid: int) -> float:
    """User+system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _window(stats: dict[str, Any]) -> str:
    lag = stats["loop_lag"]
    if not lag["samples"]:
        return f"{'-':>8} {'-':>8} {'-':>8}"
    return f"{lag['p50'] * 1000:>8.3f} {lag['p99'] * 1000:>8.3f} {lag['max'] * 1000:>8.3f}"


async def _level(port: int, pid: int, n: int, ramp: float) -> dict[str, Any]:
    """Open ``n`` streams over ``ramp`` seconds; lag while opening, while holding all, while draining."""
    await _get(port, "/sim/stats?reset=1")
    sim_cpu, own_cpu, start = _cpu_of(pid), _own_cpu(), time.monotonic()
    opened = []
    for i in range(n):
        opened.append(await _open(port))
        await asyncio.sleep(max(0.0, start + ramp * (i + 1) / n - time.monotonic()))
    firsts, dones = [f for f, _ in opened], [d for _, d in opened]
    await asyncio.wait(firsts)
    opening = await _get(port, "/sim/stats?reset=1")
    held_from = time.monotonic()
    await asyncio.wait(dones, return_when=asyncio.FIRST_COMPLETED)
    holding = await _get(port, "/sim/stats?reset=1")
    held = time.monotonic() - held_from
    results = await asyncio.gather(*dones, return_exceptions=True)
    draining = await _get(port, "/sim/stats")
    elapsed = time.monotonic() - start
    errors = sum(isinstance(r, BaseException) for r in results)
    return {"n": n, "elapsed": elapsed, "held": held, "errors": errors, "opening": opening,
            "holding": holding, "draining": draining, "sim_cpu": _cpu_of(pid) - sim_cpu,
            "client_cpu": _own_cpu() - own_cpu}  # fmt: skip


async def _bench(port: int, pid: int, levels: tuple[int, ...], ramp: float) -> None:
    await _get(port, "/sim/stats?reset=1")
    await asyncio.sleep(1.0)
    idle = (await _get(port, "/sim/stats"))["loop_lag"]
    base_p99 = max(idle["p99"] or 0.0, 1e-5)
    print(f"idle baseline: p50={idle['p50'] * 1000:.3f} ms p99={base_p99 * 1000:.3f} ms")
    print(f"streams of {MAX_TOKENS} tokens opened over {ramp:g} s; loop lag in ms (p50 p99 max) while "
          "opening them, while holding all of them (the goal), and while they drain")  # fmt: skip
    print(f"{'streams':>7} {'secs':>5} {'held':>5} {'err':>3} | {'opening: p50 p99 max':>26} | "
          f"{'holding: p50 p99 max':>26} | {'draining: p50 p99 max':>26} | {'hold p99/idle':>13} "
          f"{'sim cpu':>7} {'client':>6}")  # fmt: skip
    best, previous, began = 0, 0, time.monotonic()
    for n in levels:
        if time.monotonic() - began > BUDGET_S:
            print("time budget reached")
            break
        r = await _level(port, pid, n, ramp)
        hold = r["holding"]["loop_lag"]
        p99 = hold["p99"] if hold["samples"] else float("inf")
        print(f"{n:>7} {r['elapsed']:>5.1f} {r['held']:>5.1f} {r['errors']:>3} | {_window(r['opening'])} | "
              f"{_window(r['holding'])} | {_window(r['draining'])} | {p99 / base_p99:>13.1f} "
              f"{r['sim_cpu']:>6.2f}s {r['client_cpu']:>5.2f}s")  # fmt: skip
        if p99 < LAG_LIMIT and r["errors"] == 0 and best == previous:
            best = n  # every lower level passed too
        previous = n
    verdict = "meets" if best >= 256 else "misses"
    print(f"highest concurrency held with p99 loop lag < 5 ms: {best} ({verdict} the goal of >= 256)")


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin sim and client to CPUs")
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)))
    ap.add_argument("--ramp", type=float, default=1.0, help="seconds over which a level's streams open")
    args = ap.parse_args()
    levels = tuple(int(x) for x in args.levels.split(","))
    cpus = sorted(os.sched_getaffinity(0))
    pin = args.pin and len(cpus) >= 2
    port = _free_port()
    cmd = [sys.executable, "-m", "monitor", "sim", "--port", str(port), "--max-num-seqs", "1024",
           "--max-queue", "4096", "--decode-itl", "0.02", "--kv-blocks", "65536"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    if pin:
        os.sched_setaffinity(proc.pid, cpus[:1])
        os.sched_setaffinity(0, cpus[1:])
    where = f"sim on CPU {cpus[0]}, client on {cpus[1:]}" if pin else "off"
    print(f"pinning: {where}; load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    loop = _new_loop()
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                loop.run_until_complete(_get(port, "/sim/stats"))
                break
            except (OSError, ValueError, IndexError):
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                print("simulator did not start", file=sys.stderr)
                return 1
            time.sleep(0.1)
        loop.run_until_complete(_bench(port, proc.pid, levels, args.ramp))
        return 0
    finally:
        loop.close()
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    sys.exit(main())
