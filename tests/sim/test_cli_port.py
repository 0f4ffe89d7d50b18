"""``m3mon sim --port`` refuses a port it cannot bind instead of serving on another one."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.cli import main

M3MON = str(Path(sys.executable).parent / "m3mon")

pytestmark = pytest.mark.timeout(20)  # the old code went on to serve (on another port)


@pytest.mark.parametrize("value", ["99999", "0", "-1", "http"])
def test_a_port_outside_1_to_65535_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        status = main(["sim", "--port", value])
    except SystemExit as exc:  # argparse's own exit
        status = int(exc.code or 0)
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --port: expected a port from 1 to 65535" in err[0], err


def test_a_taken_port_is_one_line_before_anything_is_printed(tmp_path: Path) -> None:
    """Issue 26, finding 6: it printed "serving on …:PORT", then uvicorn's ``[Errno 98]``, exit 3."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([M3MON, "sim", "--host", "127.0.0.1", "--port", str(port)],
                                capture_output=True, text=True, timeout=15, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 1, result
    assert result.stdout == ""  # no "serving on" for a server that never served
    assert result.stderr == (
        f"m3mon sim: cannot listen on 127.0.0.1:{port} (--host/--port): Address already in use\n"
    )
