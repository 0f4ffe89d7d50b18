"""``m3mon demo`` keeps an earlier output folder: it refuses it in one line, before anything runs,
unless ``--replace`` is given; ``--serve`` without a demo's output is refused the same way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)


def _demo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "monitor", "demo", "--scale", "0.05", "--history", "0", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=30)


def test_an_earlier_output_is_kept_and_the_refusal_says_how_to_replace_it(tmp_path: Path) -> None:
    earlier = tmp_path / "demo-out" / "db" / "m3mon.db"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"replay runs stored by an earlier contract flow")
    proc = _demo(cwd=tmp_path)  # the default --out, demo-out
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("m3mon demo: demo-out holds earlier output") and "--replace" in line, line
    assert earlier.read_bytes() == b"replay runs stored by an earlier contract flow"
    assert sorted(p.name for p in (tmp_path / "demo-out").rglob("*")) == ["db", "m3mon.db"]


def test_serving_a_folder_without_a_demo_is_refused_in_one_line(tmp_path: Path) -> None:
    proc = _demo("--serve", "--out", str(tmp_path / "nothing-here"), cwd=tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert "demo-config.yaml: no demo output here" in line, line
