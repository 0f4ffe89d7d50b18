"""Pages of a report PDF as text (poppler's ``pdftotext``, one call per page), and the headings of
its HTML, to find a heading printed last on a page with what it heads on the next one."""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

from tests.support.real import require_binary

FOOTER = re.compile(r"^page \d+( of( \d+)?)?$")
#: Elements that head what follows them: section and class headings, a definition's term, a
#: table's class row.
HEADS = (r"<h[1-4][^>]*>(.*?)</h[1-4]>", r"<dt>(.*?)</dt>", r'<tr class="class-row"><td[^>]*>(.*?)</td>')


def pages(pdf: Path) -> list[list[str]]:
    exe = require_binary("pdfinfo", "/usr/bin/pdfinfo")
    info = subprocess.run([exe, str(pdf)], capture_output=True, text=True, timeout=60, check=True).stdout
    count = int(re.search(r"^Pages:\s+(\d+)", info, re.M)[1])  # type: ignore[index]
    text = require_binary("pdftotext", "/usr/bin/pdftotext")
    out = []
    for n in range(1, count + 1):
        body = subprocess.run([text, "-f", str(n), "-l", str(n), str(pdf), "-"], capture_output=True,
                              text=True, timeout=60, check=True).stdout  # fmt: skip
        lines = [" ".join(x.split()) for x in body.splitlines()]
        out.append([x for x in lines if x and not FOOTER.match(x)])
    return out


def headings(page_html: str) -> list[str]:
    found = []
    for pattern in HEADS:
        for m in re.finditer(pattern, page_html, flags=re.S):
            text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", m[1])).split())
            if text:
                found.append(text)
    return found


def orphans(pdf: Path, page_html: str) -> list[tuple[int, str]]:
    """(page, line) of each page whose last line is a heading (not the last page)."""
    heads = headings(page_html)
    found = []
    for n, lines in enumerate(pages(pdf)[:-1], start=1):
        while lines and lines[-1] in BADGES:  # a class row's status badge, printed after its name
            lines = lines[:-1]
        if lines and any(lines[-1] == h or (len(h) > 12 and h.startswith(lines[-1])) for h in heads):
            found.append((n, lines[-1]))
    return found


#: The status badges a class row ends with.
BADGES = ("met", "at risk", "missed", "no data")
