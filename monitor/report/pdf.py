"""``report.pdf``: the same HTML laid out on A4 pages by WeasyPrint (its ``@page`` rules apply).

The page is self-contained, so WeasyPrint may fetch nothing but ``data:`` URIs; any resource it
fails to load (a chart that would silently go missing) makes the PDF fail instead.
"""

from __future__ import annotations

import logging
from typing import Any

from monitor.errors import ReportError

#: WeasyPrint and fontTools log every font subset at INFO/DEBUG; the report needs none of it.
_QUIET = ("weasyprint", "fontTools")


class _Errors(logging.Handler):
    """Collects the errors WeasyPrint logs (it logs failed resources instead of raising)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage()[:200])


def _fetcher() -> Any:
    """A URL fetcher limited to ``data:`` URIs (WeasyPrint >= 69 API, else the legacy function)."""
    import weasyprint

    if hasattr(weasyprint, "URLFetcher"):
        return weasyprint.URLFetcher(allowed_protocols=["data"])

    def legacy(url: str, timeout: float = 10.0, ssl_context: object = None) -> Any:
        if not url.startswith("data:"):
            raise ValueError(f"the report fetches nothing but inline data (refused {url[:60]!r})")
        return weasyprint.default_url_fetcher(url, timeout, ssl_context)

    return legacy


def render_pdf(html: str) -> bytes:
    """PDF bytes of a self-contained report page."""
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.ERROR)
    import weasyprint

    errors = _Errors()
    logger = logging.getLogger("weasyprint")
    logger.addHandler(errors)
    try:
        out = weasyprint.HTML(string=html, base_url=None, url_fetcher=_fetcher()).write_pdf()
    except Exception as exc:  # WeasyPrint raises many types; the caller needs one
        raise ReportError(f"could not render the PDF: {exc}") from exc
    finally:
        logger.removeHandler(errors)
    if errors.messages:
        raise ReportError(f"could not render the PDF: {errors.messages[0]}")
    if not isinstance(out, bytes):
        raise ReportError("WeasyPrint returned no PDF")
    return out
