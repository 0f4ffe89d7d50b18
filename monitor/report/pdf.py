"""``report.pdf``: the same HTML laid out on A4 pages by WeasyPrint (its ``@page`` rules apply)."""

from __future__ import annotations

import logging

from monitor.errors import ReportError

#: WeasyPrint and fontTools log every font subset at INFO/DEBUG; the report needs none of it.
_QUIET = ("weasyprint", "fontTools")


def _inline_only(url: str, timeout: float = 10.0, ssl_context: object = None) -> dict[str, object]:
    """WeasyPrint URL fetcher that serves ``data:`` URIs only: the report never reaches out."""
    import weasyprint

    if not url.startswith("data:"):
        raise ValueError(f"the report fetches nothing but inline data (refused {url[:60]!r})")
    result: dict[str, object] = weasyprint.default_url_fetcher(url, timeout, ssl_context)
    return result


def render_pdf(html: str) -> bytes:
    """PDF bytes of a self-contained report page (no network: every resource is inline)."""
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.ERROR)
    import weasyprint

    try:
        out = weasyprint.HTML(string=html, base_url=None, url_fetcher=_inline_only).write_pdf()
    except Exception as exc:  # WeasyPrint raises many types; the caller needs one
        raise ReportError(f"could not render the PDF: {exc}") from exc
    if not isinstance(out, bytes):
        raise ReportError("WeasyPrint returned no PDF")
    return out
