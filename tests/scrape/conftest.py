"""Shared helpers of the collector tests: fixture pages and readings."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.scrape.collector import read_text
from monitor.scrape.reading import Reading

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "metrics"
PAGES = sorted(p.name for p in FIXTURES.glob("*.txt"))
M3 = "MiniMaxAI/MiniMax-M3"


def page_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def reading_of(name: str, at: float = 1000.0, *, partial: bool = False) -> Reading:
    return read_text(page_text(name), at, partial=partial)


@pytest.fixture(params=PAGES)
def page_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)
