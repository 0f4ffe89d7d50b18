"""A short ``m3mon demo --replace`` over an earlier output, then the commands its closing hint
prints, run as printed: the simulators come back on the demo's ports and ``m3mon run`` on the
demo's config scrapes every pool without a connection error."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.service.live import Monitor, stop, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
POOLS = ("m3-interactive", "m3-repo", "m3-extended")


def _hint(stdout: str) -> list[list[str]]:
    tail = stdout.split("== Watch it again", 1)[1]
    return [shlex.split(ln) for ln in tail.splitlines() if ln.startswith("    ")]


def test_replace_then_the_printed_commands_watch_the_demo_pools_again(tmp_path: Path) -> None:
    out = tmp_path / "demo-out"
    out.mkdir()
    (out / "earlier.txt").write_text("an earlier run")
    cmd = [sys.executable, "-m", "monitor", "demo", "--scale", "0.05", "--history", "0", "--out", str(out)]
    proc = subprocess.run([*cmd, "--replace"], capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not (out / "earlier.txt").exists() and (out / "demo-config.yaml").is_file()
    serve, run = _hint(proc.stdout)
    assert serve[-4:] == ["demo", "--serve", "--out", str(out)] and run[-3:] == [
        "run",
        "-c",
        str(out / "demo-config.yaml"),
    ]
    exporter = proc.stdout.split("then read ", 1)[1].split()[0].removesuffix("/metrics")
    with (tmp_path / "serve.log").open("ab") as log:
        sims = subprocess.Popen(serve, stdout=log, stderr=subprocess.STDOUT)
    m = Monitor(tmp_path, out / "demo-config.yaml", exporter, sims)
    monitor = None
    try:
        wait_until(
            lambda: "serving until Ctrl-C" in (tmp_path / "serve.log").read_text(), 30, "the simulators"
        )
        with (tmp_path / "run.log").open("ab") as log:
            monitor = subprocess.Popen(run, stdout=log, stderr=subprocess.STDOUT)
        for pool in POOLS:
            wait_until(
                lambda p=pool: m.metric("m3mon_scrape_success", endpoint=p) == 1, 30, f"a scrape of {pool}"
            )
        errors = m.metric("m3mon_scrape_errors_total")
    finally:
        codes = [stop(p) for p in (monitor, sims) if p is not None]
    text = m.log()
    assert codes == [0, 0], (codes, text[-2000:], (tmp_path / "serve.log").read_text()[-2000:])
    assert errors == 0 and "connect_error" not in text and "failed" not in text, text[-3000:]
