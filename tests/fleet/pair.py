"""Replicas of ``m3mon run`` on one PostgreSQL database whose paths a test can break.

Each replica gets its own configuration file (its endpoints' ``base_url`` may go through a
:mod:`tests.support.flaky` proxy), its own storage URL (the database directly, through a proxy,
or as another role), its own spool and listen port. Slots and evaluation steps are short (2 s)
so a test sees many of them; every process is stopped (SIGKILL at the end is fine: the database is
thrown away).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from monitor import conventions as cv
from tests.fleet.stack import Replica
from tests.support.prometheus import free_port

STEP = 2.0  # evaluation step and scrape interval, seconds
CLASS = "c"
SERVER_SLO = f"{CLASS}/server-availability"
PROBE_SLO = f"{CLASS}/availability"
MODEL = "MiniMaxAI/MiniMax-M3"


def config(path: Path, endpoints: dict[str, str], shards: int = 1) -> Path:
    """A fleet config: ``endpoints`` (name -> base URL) in one class, a probe and a server SLO."""
    eps = "".join(f"  - {{name: {n}, base_url: '{u}', model: {MODEL}, classes: [{CLASS}], scrape_interval: 2s}}\n"
                  for n, u in endpoints.items())  # fmt: skip
    path.write_text(f"""version: m3mon/v1
endpoints:
{eps}request_classes:
  - name: {CLASS}
    max_context_tokens: 32768
    probes: [chat]
    probe: {{interval: 2s, jitter: 0.3s, timeout: 3s}}
    slos:
      - {{name: availability, sli: availability, objective: 99}}
      - {{name: server-availability, sli: availability, objective: 99, source: server}}
storage: {{buffer_dir: spool}}
fleet: {{shards: {shards}}}
""")
    return path


def start(cfg: Path, home: Path, shard: str, name: str, storage_url: str) -> Replica:
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "monitor", "run", "-c", str(cfg), "--shard", shard, "--replica", name,
            "--listen", f"127.0.0.1:{port}", "--evaluation-step", f"{STEP:g}", "--no-report"]  # fmt: skip
    env = {**os.environ, "M3MON_STORAGE_URL": storage_url}
    with (home / "run.log").open("ab") as log:
        proc = subprocess.Popen(args, cwd=home, stdout=log, stderr=subprocess.STDOUT, env=env)
    return Replica(int(shard.split("/")[0]), name, port, proc)


@contextmanager
def replicas() -> Iterator[list[Replica]]:
    """A list the test appends started replicas to; all of them are killed at the end."""
    started: list[Replica] = []
    try:
        yield started
    finally:
        for r in started:
            r.stop(signal.SIGKILL)


def rows(url: str, sql: str, **params: Any) -> list[Any]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql), params))
    finally:
        engine.dispose()


def gauge(r: Replica, metric: str) -> float | None:
    """A replica's sample of ``metric`` (None while it does not answer yet)."""
    try:
        return r.gauge(metric) if r.proc.poll() is None else None
    except httpx.HTTPError:
        return None


def evaluator(r: Replica) -> bool:
    return gauge(r, cv.FLEET_EVALUATOR) == 1.0


@contextmanager
def load(base_url: str, per_second: float) -> Iterator[list[int]]:
    """Chat requests straight to the server at ``per_second`` from a thread (the users' traffic);
    yields the list of status codes, stopped and joined at the end."""
    stop, codes = threading.Event(), list[int]()

    def run() -> None:
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
                try:
                    codes.append(client.post(f"{base_url}/v1/chat/completions", json=body).status_code)
                except httpx.HTTPError:
                    codes.append(0)
                stop.wait(1.0 / per_second)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield codes
    finally:
        stop.set()
        thread.join(15)


def finished_between(truth: dict[str, Any], start: float, end: float) -> int:
    """Requests the server finished in ``(start, end]`` (wall clock) that count as valid events
    (every finished reason but ``abort``), from its ground truth."""
    return sum(
        1
        for r in truth["requests"]
        if r["finish"]["wall"] is not None
        and start < r["finish"]["wall"] <= end
        and r["finish_reason"] != "abort"
    )


def wait(condition: Any, timeout: float, what: str, every: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
