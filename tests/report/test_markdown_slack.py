"""report.md uses no escape that Slack shows literally: Slack's mrkdwn has no backslash escapes, so
"\\(last week 80.2% left\\)" and "vllm\\_version" reached chat with their backslashes. Escaping is
still safe: a real CommonMark renderer (markdown-it-py, with GFM tables) shows every escaped value
as exactly its text, never a link, HTML, emphasis or an extra table cell."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from monitor.report.markdown import escape
from tests.report.conftest import Built

MD = MarkdownIt("commonmark").enable("table").enable("strikethrough")
#: Escapes Slack would print: a backslash before anything but the characters that start markup.
NEEDLESS = re.compile(r"\\[(){}!#.+\-]|[0-9A-Za-z]\\_[0-9A-Za-z]")


def _text(rendered: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


def _fold(text: str) -> str:
    return " ".join(text.split())


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=60))
def test_escaped_text_renders_as_itself(text: str) -> None:
    out = MD.render(f"x {escape(text)}")
    assert "<a " not in out and "<em>" not in out and "<strong>" not in out and "<code>" not in out
    assert "<s>" not in out and "<img" not in out
    assert _text(out) == _fold(f"x {text}")


@given(st.text(alphabet=st.sampled_from("ab_|*[]()<>&#!`~\\ "), max_size=30))
def test_escaped_cell_stays_one_cell(text: str) -> None:
    out = MD.render(f"| a | b |\n| --- | --- |\n| c | {escape(text)} |\n")
    cells = re.findall(r"<td>(.*?)</td>", out, flags=re.S)
    assert len(cells) == 2
    assert html.unescape(re.sub(r"<[^>]+>", "", cells[1])).strip() == _fold(text)


def test_plain_words_are_not_escaped() -> None:
    for text in ("vllm_version 0.32.1 → 0.33.0", "(last week 80.2% left)", "gpu_memory_utilization {a}!"):
        assert escape(text) == text
    assert escape("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"  # no link can open


def test_the_report_has_no_needless_escape(built: Built) -> None:
    found = NEEDLESS.findall(built.rendered.markdown)
    assert not found, found[:10]
