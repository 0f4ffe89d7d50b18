"""Fixtures of the end-to-end reliability suite: simulators (in-process or as a real process) and
PostgreSQL. The stack itself is :func:`tests.e2e.stack.running_stack`, entered by each test with
its own small configuration."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from monitor.sim.harness import SimHandle, running_simulator
from tests.e2e.stack import SIM, m3mon, stop, wait_until
from tests.support import localhttp
from tests.support.postgres import postgres_cluster  # noqa: F401 - a fixture, re-exported


@pytest.fixture
def sim() -> Iterator[SimHandle]:
    """An in-process simulator with fast steps and short answers."""
    with running_simulator(**SIM) as handle:
        yield handle


@contextmanager
def sim_process(port: int, log: Path, *flags: str) -> Iterator[subprocess.Popen[bytes]]:
    """``m3mon sim`` as its own process on ``port`` (so stopping it refuses connections for real)."""
    cmd = m3mon("sim", "--port", str(port), "--decode-itl", str(SIM["decode_itl"]), "--seed", "7", *flags)
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: localhttp.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200,
                   30, f"m3mon sim on port {port}")  # fmt: skip
        yield proc
    finally:
        stop(proc, timeout=10)


def sleep_until(deadline: float) -> None:
    time.sleep(max(0.0, deadline - time.monotonic()))
