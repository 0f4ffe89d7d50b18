"""Simulator capacity: event-loop lag inside one ``m3mon sim`` process under concurrent streams.

Starts the simulator in a subprocess, measures its idle loop lag (baseline), then ramps
concurrent streaming chat requests (64, 128, 256, 512, 1024) and reads the lag the simulator
measured itself (a 5 ms periodic timer's lateness, ``GET /sim/stats``). Prints, per level, the
p50/p99/max lag and the p99 ratio against the idle baseline, then the highest concurrency whose
p99 lag stays under 5 ms (goal: >= 256). Bounded to about two minutes.

    .venv/bin/python bench/sim.py
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from typing import Any

import httpx

LEVELS = (64, 128, 256, 512, 1024)
LAG_LIMIT = 0.005
BUDGET_S = 110.0
BODY = {
    "model": "MiniMaxAI/MiniMax-M3",
    "messages": [{"role": "user", "content": "Write a short paragraph about rivers."}],
    "stream": True,
    "max_tokens": 64,
    "ignore_eos": True,
    "chat_template_kwargs": {"thinking_mode": "disabled"},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _one(client: httpx.AsyncClient) -> int:
    chunks = 0
    async with client.stream("POST", "/v1/chat/completions", json=BODY) as r:
        async for line in r.aiter_lines():
            chunks += line.startswith("data: ")
    return chunks


async def _level(client: httpx.AsyncClient, n: int) -> dict[str, Any]:
    await client.get("/sim/stats", params={"reset": 1})
    start = time.monotonic()
    results = await asyncio.gather(*(_one(client) for _ in range(n)), return_exceptions=True)
    elapsed = time.monotonic() - start
    stats = (await client.get("/sim/stats")).json()["loop_lag"]
    errors = sum(isinstance(r, BaseException) for r in results)
    return {"n": n, "elapsed": elapsed, "errors": errors, **stats}


async def _bench(base: str) -> None:
    limits = httpx.Limits(max_connections=max(LEVELS) + 8, max_keepalive_connections=max(LEVELS) + 8)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        await client.get("/sim/stats", params={"reset": 1})
        await asyncio.sleep(1.0)
        idle = (await client.get("/sim/stats")).json()["loop_lag"]
        base_p99 = max(idle["p99"] or 0.0, 1e-5)
        print(f"idle baseline: p50={idle['p50'] * 1000:.3f} ms p99={base_p99 * 1000:.3f} ms")
        best, began = 0, time.monotonic()
        print(
            f"{'streams':>8} {'secs':>6} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
            f"{'p99/idle':>9}"
        )
        for n in LEVELS:
            if time.monotonic() - began > BUDGET_S:
                print("time budget reached")
                break
            r = await _level(client, n)
            p99 = r["p99"] or 0.0
            print(f"{n:>8} {r['elapsed']:>6.2f} {r['errors']:>6} {r['p50'] * 1000:>8.3f} {p99 * 1000:>8.3f} "
                  f"{r['max'] * 1000:>8.3f} {p99 / base_p99:>9.1f}")  # fmt: skip
            if p99 < LAG_LIMIT and r["errors"] == 0:
                best = n
        verdict = "meets" if best >= 256 else "misses"
        print(f"highest concurrency with p99 loop lag < 5 ms: {best} ({verdict} the goal of >= 256)")


def main() -> int:
    port = _free_port()
    cmd = [sys.executable, "-m", "monitor", "sim", "--port", str(port), "--max-num-seqs", "1024",
           "--max-queue", "4096", "--decode-itl", "0.02", "--kv-blocks", "65536"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                print("simulator did not start", file=sys.stderr)
                return 1
            time.sleep(0.1)
        asyncio.run(_bench(f"http://127.0.0.1:{port}"))
        return 0
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    sys.exit(main())
