"""The example config's endpoints read their key from ``M3_API_KEY``; set here so the findings the
tests pin are the config's own. With it unset, check-config warns (test_check_api_key.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("M3_API_KEY", "test-key")
