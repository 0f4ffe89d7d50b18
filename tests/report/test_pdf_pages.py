"""No PDF page ends on an orphan heading: a section or class heading, a definition's term ("Warm
capacity", "Runs") or a table's class row printed last on a page, with what it heads on the next
(report.css keeps each with what follows). Read per page with poppler's pdftotext."""

from __future__ import annotations

from tests.report import pdfpages
from tests.report.conftest import Built


def test_no_page_ends_on_a_heading(built: Built) -> None:
    pdf = built.out / "report.pdf"
    assert pdfpages.headings(built.rendered.html)  # the checker sees the headings it looks for
    assert pdfpages.orphans(pdf, built.rendered.html) == []
