""" "at risk" (and "missed") in the summary box shows its reason beside it: a class was once "at
risk" in the red box with every number beside it healthy (its 1.74× burn over the last day was
only in the appendix). The rules are docs/report.md's Status table, applied here by hand."""

from __future__ import annotations

import html
import json
import re

import pytest

from monitor.report import display, slack
from monitor.report.data import SLOLine, slo_status
from tests.report.conftest import Built


def _line(attainment: float, budget: float, recent: float) -> SLOLine:
    status = slo_status(attainment, 0.995, budget, recent)
    return SLOLine("availability", "availability", 0.995, None, "30d", 100, 100, attainment, None, budget,
                   0.5, recent, status)  # fmt: skip


@pytest.mark.parametrize(
    ("attainment", "budget", "recent", "words"),
    [
        (0.9974, 0.733, 1.74, ["last day burned 1.74×"]),  # healthy numbers beside it: the reason says why
        (0.9990, 0.196, 0.0, ["less than 25%"]),
        (0.9990, 0.100, 2.50, ["less than 25%", "last day burned 2.50×"]),
        (0.9900, 0.500, 0.0, ["99.000% is below the objective 99.5%"]),
        (0.9990, -0.10, 0.0, ["error budget is exhausted"]),
    ],
)
def test_reason_names_each_rule_that_holds(
    attainment: float, budget: float, recent: float, words: list[str]
) -> None:
    s = _line(attainment, budget, recent)
    assert s.status in ("at_risk", "missed")
    reason = display.reason(s)
    for w in words:
        assert w in reason
    assert display.reason(_line(0.999, 0.9, 0.5)) == ""  # met: nothing to explain


def _banner_md(markdown: str) -> str:
    return markdown.split("## In short")[0]


def test_every_flagged_class_in_the_box_shows_its_reason(built: Built) -> None:
    doc = json.loads(built.rendered.json)
    flagged = [
        (c["name"], s) for c in doc["classes"] for s in c["slos"] if s["status"] in ("at_risk", "missed")
    ]
    assert flagged
    box_md = _banner_md(built.rendered.markdown)
    box_html = html.unescape(
        re.sub(r"<[^>]+>", "", built.rendered.html.split('class="banner')[1].split("</div>")[0])
    )
    for name, s in flagged:
        expected = []
        if s["budget_remaining"] is not None and 0 < s["budget_remaining"] < 0.25:
            expected.append("less than 25%")
        if s["status"] == "at_risk" and s["burn_rate_last_day"] > 1:
            expected.append("last day burned")
        if s["budget_remaining"] is not None and s["budget_remaining"] <= 0:
            expected.append("error budget is exhausted")
        assert expected or s["attainment"] < s["objective"]
        (md_line,) = [ln for ln in box_md.splitlines() if ln.startswith(f"- **{name}**")]
        for w in expected:
            assert w in md_line, (w, md_line)
            assert w in box_html, w
        blocks = json.dumps(slack.payload(built.rendered.data))
        for w in expected:
            assert w in blocks
