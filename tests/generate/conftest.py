"""Shared fixtures: one real ``m3mon generate`` run into a temp dir per test session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/monitor.yaml"


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Output of the real CLI run on the example configuration."""
    out = tmp_path_factory.mktemp("generated")
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "generate", "-c", EXAMPLE, "-o", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return out
