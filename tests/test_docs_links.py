"""Every relative link in the README and docs/ opens: the file exists and, for `file#anchor`, a
heading of that file has the anchor GitHub makes of it (lower case, punctuation dropped, spaces to
hyphens, a repeated heading suffixed -1, -2 …). A newcomer who follows a link from the README must
not land on nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of ``markdown`` (its documented slug rules)."""
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for line in FENCE.sub("", markdown).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_slug_rules_match_github_examples() -> None:
    # Examples whose anchors GitHub shows on rendering these very headings.
    assert "the-service-web-config-limits-health-and-its-own-alerts" in github_anchors(
        "## The service: web config, limits, health and its own alerts"
    )
    assert "peer-results-as-evidence-m3mon-contract---import" in github_anchors(
        "## Peer results as evidence: `m3mon contract --import`"
    )
    assert github_anchors("## A\n## A") == {"a", "a-1"}


def _links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(FENCE.sub("", page.read_text()))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_opens(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in github_anchors(dest.read_text()):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
