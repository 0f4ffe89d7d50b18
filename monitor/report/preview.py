"""Pictures of a rendered report: a headless-Chromium screenshot of the HTML, PNG pages of the PDF.

Used by the tests (the page must not be blank) and by :mod:`monitor.demo.example` to keep the
example images in ``docs/examples/``. Every run is bounded by a timeout and leaves no process.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from monitor.errors import ReportError

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def _run(cmd: list[str], timeout: float) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ReportError(f"{Path(cmd[0]).name} did not finish within {timeout:g}s") from None
    if done.returncode != 0:
        raise ReportError(f"{Path(cmd[0]).name} failed ({done.returncode}): {done.stderr.decode()[-400:]}")


def screenshot(chromium: str, html: Path, png: Path, size: str = "1280,2000", timeout: float = 60.0) -> Path:
    """Screenshot ``html`` (a local file) into ``png`` with headless Chromium."""
    with tempfile.TemporaryDirectory(prefix="m3mon-chromium-") as profile:
        cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}",
               f"--window-size={size}", html.resolve().as_uri()]  # fmt: skip
        _run(cmd, timeout)
    if not png.is_file():
        raise ReportError(f"chromium wrote no screenshot to {png}")
    return png


def pdf_pages(pdftoppm: str, pdf: Path, prefix: Path, dpi: int = 70, timeout: float = 60.0) -> list[Path]:
    """Each page of ``pdf`` as ``<prefix>-<n>.png``; returns the files in page order."""
    _run([pdftoppm, "-png", "-r", str(dpi), str(pdf), str(prefix)], timeout)
    pages = sorted(prefix.parent.glob(f"{prefix.name}-*.png"))
    if not pages:
        raise ReportError(f"pdftoppm wrote no page images for {pdf}")
    return pages
