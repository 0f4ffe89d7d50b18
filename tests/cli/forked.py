"""Run ``m3mon`` commands in forked processes: a real process each, without paying Python's start-up.

The parent imports the package once; each run forks, points file descriptors 1 and 2 at files,
resets logging to the interpreter's defaults, sets the environment, calls
:func:`monitor.cli.main` (what the ``m3mon`` console script calls) and exits with its status. An
exception escaping ``main`` is printed as the interpreter would (a traceback, status 1), so a test
sees exactly what a user would. Every run is bounded: a child still running at its deadline is
killed.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    status: int
    out: str
    err: str

    @property
    def output(self) -> str:
        return self.out + self.err


def _child(argv: Sequence[str], env: Mapping[str, str | None], out: Path, err: Path) -> NoReturn:
    status = 70
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for fd, path in ((1, out), (2, err)):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.setLevel(logging.WARNING)
        from monitor import redact
        from monitor.cli import main

        redact.forget()  # as in a fresh process: only what this command remembers is masked

        try:
            status = main(list(argv))
        except SystemExit as exc:
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def run(argv: Sequence[str], env: Mapping[str, str | None], workdir: Path, timeout: float = 30.0) -> Result:
    """Run ``m3mon argv`` in a forked child with ``env`` applied (None removes a variable)."""
    workdir.mkdir(parents=True, exist_ok=True)
    n = len(list(workdir.glob("*.out")))
    out, err = workdir / f"{n}.out", workdir / f"{n}.err"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(argv, env, out, err)
    deadline = time.monotonic() + timeout
    while True:
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"m3mon {' '.join(argv)} still running after {timeout:g} s")
        time.sleep(0.02)
    status = os.waitstatus_to_exitcode(wait_status)
    return Result(tuple(argv), status, out.read_text(), err.read_text())
