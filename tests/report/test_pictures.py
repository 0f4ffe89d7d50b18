"""The HTML in headless Chromium and the PDF's pages as PNG are real, non-blank pictures."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from monitor.report import charts, preview
from tests.report.conftest import Built
from tests.support.real import require_binary


def non_white_share(png: Path) -> float:
    with Image.open(png) as raw:
        img = raw.convert("L")
    lo, hi = img.getextrema()
    assert lo != hi, f"{png} is a single colour"
    hist = img.histogram()
    return 1.0 - sum(hist[245:]) / (img.width * img.height)


@pytest.mark.real
@pytest.mark.timeout(120)
def test_chromium_screenshot_is_not_blank(built: Built, tmp_path: Path) -> None:
    chromium = require_binary("chromium", "/usr/bin/chromium")
    png = preview.screenshot(chromium, built.out / "report.html", tmp_path / "shot.png", timeout=90)
    with Image.open(png) as img:
        assert img.size == (1280, 2000)
    assert non_white_share(png) > 0.03


@pytest.mark.real
def test_pdf_pages_are_not_blank(built: Built, tmp_path: Path) -> None:
    pdftoppm = require_binary("pdftoppm", "/usr/bin/pdftoppm")
    pages = preview.pdf_pages(pdftoppm, built.out / "report.pdf", tmp_path / "page")
    assert len(pages) >= 2
    assert all(non_white_share(p) > 0.02 for p in pages)


def test_charts_are_reproducible_and_labels_stay_text(built: Built) -> None:
    data = built.rendered.data
    agent = [s for s in data.series if s.request_class == "agent"]
    tz = data.week.start.tzinfo
    first = charts.burn_down(agent, tz)
    assert first is not None and first == charts.burn_down(agent, tz)
    assert first.startswith(b"\x89PNG")
    assert charts.plain("cost $5 $x$") == r"cost \$5 \$x\$"
    assert charts.latency(data.latency) == charts.latency(data.latency)
    empty = [s for s in data.series if s.request_class == "empty"]
    assert charts.burn_down(empty, tz) is None  # no data: no chart, the page says so
