"""Building and writing the report: ReportData from the store, then the four files.

``report.html`` (self-contained), ``report.pdf`` (WeasyPrint from the same HTML), ``report.md``
and ``report.json``. Files are written to a temporary name and renamed into place, so a failed
run never leaves a half-written report over a good one.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from monitor.errors import ReportError
from monitor.model import Model
from monitor.report.collect import collect
from monitor.report.data import Period, ReportData
from monitor.report.export import render_json
from monitor.report.markdown import render_markdown
from monitor.report.page import render_html
from monitor.report.pdf import render_pdf
from monitor.store import Store

FILES = ("report.html", "report.pdf", "report.md", "report.json")


@dataclass(frozen=True)
class Rendered:
    """The report in every output format."""

    data: ReportData
    html: str
    pdf: bytes
    markdown: str
    json: str

    def contents(self) -> dict[str, bytes]:
        return {
            "report.html": self.html.encode("utf-8"),
            "report.pdf": self.pdf,
            "report.md": self.markdown.encode("utf-8"),
            "report.json": self.json.encode("utf-8"),
        }


def build(model: Model, store: Store, week: Period, now: datetime) -> ReportData:
    """Read everything the report needs for ``week`` from ``store`` in one read transaction."""
    store.check_schema()
    with store.session() as session:
        return collect(model, session, week, now)


def render(data: ReportData) -> Rendered:
    html = render_html(data)
    return Rendered(data, html, render_pdf(html), render_markdown(data), render_json(data))


def write(rendered: Rendered, out_dir: str | Path) -> dict[str, Path]:
    """Write the four files into ``out_dir`` (created if needed); returns their paths by name."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        paths = {}
        for name, body in rendered.contents().items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out)
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; a report is meant to be read and forwarded
            os.replace(tmp, out / name)
            paths[name] = out / name
    except OSError as exc:
        raise ReportError(f"cannot write the report to {out}: {exc}") from exc
    return paths
