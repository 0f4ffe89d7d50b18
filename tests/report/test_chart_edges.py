"""A chart's y labels are never cut at the image's left edge: the breakdown chart once drew
"nded-context (pool)". Read from the pixels: the image's first columns hold no ink."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from monitor.report import charts
from monitor.report.latency_data import BREAKDOWN_PARTS, Breakdown, LatencyStats

POOL = "all requests of m3-extended (the class's own pool)"


def _ink_at_left_edge(png: bytes, columns: int = 3) -> int:
    img = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)
    return int((img[:, :columns] < 200).sum())


def _breakdown(name: str, population: str) -> Breakdown:
    parts = tuple((p, 0.5 if p in ("queue", "prefill") else None) for p in BREAKDOWN_PARTS)
    return Breakdown(name, 10, parts, (), population)


@pytest.mark.parametrize("name", ["chat", "extended-context", "a-very-long-request-class-name-for-repos"])
def test_breakdown_labels_inside_the_image(name: str) -> None:
    rows = [_breakdown("chat", "probe requests"), _breakdown(name, POOL)]
    png = charts.breakdown(rows)
    assert png is not None
    assert _ink_at_left_edge(png) == 0


def test_latency_labels_inside_the_image() -> None:
    stats = [LatencyStats(c, k, 5, 0.1, 0.2, 0.3) for c in ("chat", "extended-context-beyond-128k-tokens")
             for k in ("ttft", "itl", "e2e")]  # fmt: skip
    png = charts.latency(stats)
    assert png is not None
    assert _ink_at_left_edge(png) == 0
