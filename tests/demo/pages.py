"""Reading a rendered report as its reader gets it: the HTML's tables and embedded chart images,
and the PDF's text (pdftotext)."""

from __future__ import annotations

import base64
import subprocess
from html.parser import HTMLParser
from pathlib import Path

from tests.support.real import require_binary


class _Tables(HTMLParser):
    """Every table of a page as rows of cell texts (whitespace collapsed), and every image."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.images: list[tuple[str, str]] = []  # (alt, src)
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            a = dict(attrs)
            self.images.append((a.get("alt") or "", a.get("src") or ""))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parsed(html: Path) -> _Tables:
    p = _Tables()
    p.feed(html.read_text(encoding="utf-8"))
    return p


def table(html: Path, first_header: str) -> list[list[str]]:
    """The data rows of the table whose first header cell is ``first_header``."""
    (found,) = [t for t in _parsed(html).tables if t and t[0] and t[0][0] == first_header]
    return found[1:]


def images(html: Path, alt_prefix: str) -> dict[str, bytes]:
    """The PNG bytes of the page's ``data:`` images whose alt text starts with ``alt_prefix``,
    by the rest of the alt text."""
    head = "data:image/png;base64,"
    return {
        alt[len(alt_prefix) :]: base64.b64decode(src[len(head) :])
        for alt, src in _parsed(html).images
        if alt.startswith(alt_prefix) and src.startswith(head)
    }


def pdf_text(pdf: Path) -> str:
    """The PDF's text in reading order, whitespace collapsed (lines wrapped by the layout rejoin)."""
    exe = require_binary("pdftotext", "/usr/bin/pdftotext")
    out = subprocess.run([exe, str(pdf), "-"], capture_output=True, timeout=60, check=True)
    return " ".join(out.stdout.decode().split())
