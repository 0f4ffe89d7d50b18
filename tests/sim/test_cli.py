"""``m3mon sim``: its help text and a real subprocess server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest

from monitor.cli import main
from tests.support import localhttp

pytestmark = pytest.mark.timeout(60)
OPTIONS = ("--host", "--port", "--model", "--max-model-len", "--block-size", "--max-num-seqs", "--max-queue",
           "--kv-blocks", "--prefill-tps", "--decode-itl", "--seed", "--faults", "--startup-delay", "--api-key",
           "--otlp-traces-endpoint", "--enable-per-request-metrics", "--spec-tokens")  # fmt: skip


def test_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sim", "--help"])
    out = capsys.readouterr().out
    for opt in OPTIONS:
        assert opt in out
    assert "(default: 127.0.0.1)" in out and "(default: 8000)" in out


def test_bad_faults_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "--faults", '{"nope": 1}']) == 2  # bad input
    assert "nope" in capsys.readouterr().err


def test_subprocess_server() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "monitor", "sim", "--port", str(port), "--decode-itl", "0.002",
                             "--startup-delay", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if localhttp.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        body = {
            "model": "MiniMaxAI/MiniMax-M3",
            "messages": [{"role": "user", "content": "Return the word ready."}],
        }
        r = localhttp.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=10)
        assert r.json()["choices"][0]["message"]["content"] == "ready"
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--dcgm-gpus", "-1", "--dcgm-gpus: expected 0 to 64 GPUs, got -1"),
        (
            "--kv-cache-metrics-sample",
            "1.5",
            "--kv-cache-metrics-sample: expected a share from 0 to 1, got 1.5",
        ),
    ],
)
def test_bad_gpu_and_kv_flags_are_one_line_errors(
    flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", flag, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
