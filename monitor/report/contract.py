"""The weekly report's *Operating contract* section (docs/contract.md): one block per class.

Collected with the rest of the report in its read transaction (:func:`collect`), rendered into
the Markdown, the HTML page (every value escaped) and the JSON export.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import markupsafe
from sqlalchemy.orm import Session

from monitor.contract.build import ClassContract, build_contract
from monitor.contract.render import html_section, markdown
from monitor.model import Model


def collect(model: Model, session: Session, end: float) -> tuple[ClassContract, ...]:
    """The contract as of ``end`` (traffic of the 7 days before it, every stored replay run)."""
    return tuple(build_contract(session, model, end))


def markdown_lines(contracts: tuple[ClassContract, ...]) -> list[str]:
    return [*markdown(contracts, heading="##").rstrip("\n").split("\n"), ""] if contracts else []


def html(contracts: tuple[ClassContract, ...]) -> markupsafe.Markup:
    """The section's HTML; :func:`monitor.contract.render.html_section` escapes every value."""
    return markupsafe.Markup(html_section(contracts)) if contracts else markupsafe.Markup("")


def to_json(contracts: tuple[ClassContract, ...]) -> list[dict[str, Any]]:
    return [{**asdict(c), "advice": c.ceiling.advice} for c in contracts]
