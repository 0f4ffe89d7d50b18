"""A server process for a test: started, waited for until its readiness URL answers 200, always stopped."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import localhttp
from tests.support.prometheus import stop, wait_for


@contextmanager
def running_process(args: list[str], log: Path, ready: str) -> Iterator[None]:
    """Run ``args`` (output to ``log``) until the block ends; fail the test if it exits early."""
    with log.open("ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _alive(proc, log) and localhttp.get(ready, timeout=2).status_code == 200, 30, ready)
        yield
    finally:
        stop(proc)


def _alive(proc: subprocess.Popen[bytes], log: Path) -> bool:
    if proc.poll() is not None:
        pytest.fail(f"{log.stem} exited with {proc.returncode}: {log.read_text(errors='replace')[-1500:]}")
    return True
