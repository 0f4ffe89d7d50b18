"""Pictures of the demo's report for ``docs/examples/``: how a new user first sees it.

``python -m monitor.demo.pictures demo-out/report docs/examples`` takes headless-Chromium
screenshots of ``report.html`` (its top, and its charts) and renders the PDF's pages with
pdftoppm, keeping the first page and the first page with charts.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from monitor.errors import ReportError
from monitor.report import preview

#: The charts' first colour: a PDF page holding many such pixels shows charts.
BLUE = (0x1F, 0x77, 0xB4)
TOP = "1280,2700"  # down to the incidents table
#: The first screen at a desktop and at a narrow window (a status column must not leave the screen).
WIDTHS = {"report-html-1400.png": "1400,1400", "report-html-800.png": "800,1600"}
TALL = (1280, 12000)


def _tool(name: str) -> str:
    found = shutil.which(name) or next((p for p in (f"/usr/bin/{name}",) if Path(p).is_file()), None)
    if found is None:
        raise ReportError(f"{name} is needed for the pictures and was not found")
    return found


def blue_pixels(png: Path) -> NDArray[np.bool_]:
    """Which pixels of ``png`` are (close to) the charts' first colour."""
    with Image.open(png) as raw:
        rgb = np.asarray(raw.convert("RGB"), dtype=np.int16)
    near: NDArray[np.bool_] = np.all(np.abs(rgb - np.array(BLUE, dtype=np.int16)) <= 40, axis=2)
    return near


def blue_share(png: Path) -> float:
    return float(blue_pixels(png).mean())


def _charts(chromium: str, html: Path, out: Path, tmp: Path) -> Path:
    """The charts section: a tall screenshot, cropped from the first chart to the page's end."""
    tall = preview.screenshot(chromium, html, tmp / "tall.png", size=f"{TALL[0]},{TALL[1]}", timeout=120)
    rows = np.flatnonzero(blue_pixels(tall).sum(axis=1) > 20)  # rows crossing a chart's lines or bars
    with Image.open(tall) as raw:
        img = raw.convert("RGB")
    ink = np.flatnonzero((np.asarray(img.convert("L")) < 245).any(axis=1))
    top = max(0, int(rows[0]) - 160) if len(rows) else 0
    bottom = int(ink[-1]) + 20 if len(ink) else img.height
    img.crop((0, top, img.width, min(bottom, top + 7000))).save(out)
    return out


def pictures(report: Path, out: Path) -> list[Path]:
    """Write the example pictures of the report in ``report`` into ``out``; returns them."""
    chromium, pdftoppm = _tool("chromium"), _tool("pdftoppm")
    out.mkdir(parents=True, exist_ok=True)
    html = report / "report.html"
    made = [preview.screenshot(chromium, html, out / "report-screenshot.png", size=TOP, timeout=120)]
    made += [
        preview.screenshot(chromium, html, out / name, size=size, timeout=120)
        for name, size in WIDTHS.items()
    ]
    with tempfile.TemporaryDirectory(prefix="m3mon-pictures-") as tmp:
        made.append(_charts(chromium, html, out / "report-charts.png", Path(tmp)))
        pages = preview.pdf_pages(pdftoppm, report / "report.pdf", Path(tmp) / "page")
        print(f"report.pdf: {len(pages)} pages")
        charts = next((p for p in pages if blue_share(p) > 0.0003), pages[-1])  # the first with charts
        for name, page in (("report-pdf-page-1.png", pages[0]), ("report-pdf-charts.png", charts)):
            shutil.copyfile(page, out / name)
            made.append(out / name)
    return made


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("report", type=Path, help="folder with report.html and report.pdf (demo-out/report)")
    p.add_argument("out", type=Path, help="where the pictures go (docs/examples)")
    args = p.parse_args(argv)
    for path in pictures(args.report, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
