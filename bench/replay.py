"""The replay driver's own overhead: client CPU per request and timing error vs simulator truth.

Starts ``m3mon sim`` in its own process (both use the system-wide monotonic clock), then runs the
replay driver three times with the same profile (600-token prompts, 64 forced output tokens):

0. a one-second warm-up (imports, the tokenizer calibration, first connections), not reported;
1. baseline: concurrency 1 (one request at a time: the least the client can cost);
2. the target rate (``--rate``, open loop, Poisson);
3. twice the target rate.

Per run it prints the client's CPU seconds per request (``time.process_time`` over the run), the
send lag (when the simulator received each request − when the schedule said to send it) and the
TTFT error (client first-token arrival − the simulator's write of the first token's frames,
``GET /sim/truth``), p50/p99 in ms, and the ratios of each loaded run to the baseline.

Usage: ``.venv/bin/python bench/replay.py [--rate 20] [--duration 10]``
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import socket
import subprocess
import sys
import time
from typing import Any

import httpx

from monitor.model import Endpoint, ProbePlan, RequestClass
from monitor.probes.target import Target
from monitor.probes.timing import percentile
from monitor.replay.driver import Load, Run, replay
from monitor.replay.profile import TrafficProfile

PROFILE = TrafficProfile.model_validate(
    {
        "class": "bench",
        "prompt_tokens": {"quantiles": [[0, 600]]},
        "output_tokens": {"quantiles": [[0, 64]]},
    }
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_sim(port: int) -> subprocess.Popen[bytes]:
    """``m3mon sim`` with 10 ms decode steps, no jitter, no speculative tokens; waits for /health."""
    cmd = [
        sys.executable,
        "-m",
        "monitor",
        "sim",
        "--port",
        str(port),
        "--decode-itl",
        "0.01",
        "--jitter",
        "0",
        "--spec-tokens",
        "0",
        "--max-num-seqs",
        "256",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("simulator did not start")


def make_target(base_url: str) -> Target:
    plan = ProbePlan(("chat",), 30.0, 60.0, 0.0, 1000, 0.0, 1)
    endpoint = Endpoint("sim", base_url, "vllm", "MiniMaxAI/MiniMax-M3", ("bench",), 15.0)
    return Target(endpoint, RequestClass("bench", 32768, plan, ()))


def first_write(r: dict[str, Any]) -> float | None:
    return next((t for t, k in zip(r["sent_times"]["mono"], r["sent_tokens"], strict=True) if k > 0), None)


def measure(target: Target, load: Load, base_url: str) -> dict[str, float]:
    cpu0 = time.process_time()
    run: Run = asyncio.run(replay(target, PROFILE, load, timeout=60.0))
    cpu = time.process_time() - cpu0
    truth = sorted(
        httpx.get(f"{base_url}/sim/truth", timeout=30).json()["requests"], key=lambda r: r["received"]["mono"]
    )
    received = [r["received"]["mono"] for r in truth]
    lag, err = [], []
    for o in run.outcomes:
        if o.body_sent_at is None or o.first_token_at is None:
            continue
        i = min(max(bisect.bisect_left(received, o.body_sent_at) - 1, 0), len(truth) - 1)
        near = min(truth[max(0, i - 2) : i + 3], key=lambda r: abs(r["received"]["mono"] - o.body_sent_at))
        write = first_write(near)
        if write is not None:
            err.append((o.first_token_at - write) * 1000)
        if load.concurrency is None:
            lag.append((near["received"]["mono"] - (run.started + o.planned.offset)) * 1000)
    ok = sum(1 for o in run.outcomes if o.ok)
    return {
        "requests": float(len(run.outcomes)),
        "ok": float(ok),
        "cpu_per_request": cpu / max(1, len(run.outcomes)),
        "lag_p50": percentile(lag, 50) or 0.0,
        "lag_p99": percentile(lag, 99) or 0.0,
        "err_p50": percentile(err, 50) or 0.0,
        "err_p99": percentile(err, 99) or 0.0,
    }


def line(name: str, m: dict[str, float]) -> str:
    return (
        f"{name:<22} {m['requests']:>5.0f} req ({m['ok']:.0f} ok)  "
        f"CPU {m['cpu_per_request'] * 1000:6.2f} ms/req  "
        f"send lag p50 {m['lag_p50']:6.2f} p99 {m['lag_p99']:6.2f} ms  "
        f"TTFT error p50 {m['err_p50']:5.2f} p99 {m['err_p99']:5.2f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0, help="target arrival rate, requests/s")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    args = parser.parse_args()
    port = free_port()
    sim = start_sim(port)
    try:
        base_url = f"http://127.0.0.1:{port}"
        target = make_target(base_url)
        measure(target, Load(1.0, concurrency=1), base_url)  # warm-up: imports, calibration, first connection
        base = measure(target, Load(args.duration, concurrency=1), base_url)
        runs = {
            f"rate {args.rate:g}/s": measure(target, Load(args.duration, rate=args.rate), base_url),
            f"rate {2 * args.rate:g}/s": measure(target, Load(args.duration, rate=2 * args.rate), base_url),
        }
    finally:
        sim.terminate()
        sim.wait(10)
    print("load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(line("baseline concurrency 1", base))
    for name, m in runs.items():
        print(line(name, m))
        print(
            f"  vs baseline: CPU/request {m['cpu_per_request'] / base['cpu_per_request']:.2f}x, "
            f"TTFT error p99 {m['err_p99'] / max(base['err_p99'], 1e-6):.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
