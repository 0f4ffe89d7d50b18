"""Finding the real components tests run against (promtool, prometheus, postgres, chromium...).

Where a component is missing, the test skips with a clear reason, unless ``M3MON_REQUIRE_REAL=1``
is set (CI sets it): then a missing component fails the test instead of hiding it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def require_real() -> bool:
    """True when missing real components must fail rather than skip (CI)."""
    return os.environ.get("M3MON_REQUIRE_REAL", "") not in ("", "0", "false", "no")


def require_binary(name: str, *candidates: str) -> str:
    """Path of executable ``name`` (searched on PATH, then in ``candidates``); skip or fail if absent."""
    found = shutil.which(name)
    if found is None:
        found = next((c for c in candidates if Path(c).is_file() and os.access(c, os.X_OK)), None)
    if found is not None:
        return found
    message = f"{name} not found (looked on PATH and in {list(candidates) or 'nowhere else'})"
    if require_real():
        pytest.fail(f"M3MON_REQUIRE_REAL=1 but {message}")
    pytest.skip(message)
