"""Zero is written 0%, never -0%: a stage share of a hair below zero (two clocks) or a budget a hair
overspent once printed "-0%" in about twenty tail-share cells."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from monitor.bottleneck.tail import OTHER, TailShare
from monitor.report import tail
from monitor.slo import numbers

NEGATIVE_ZERO = re.compile(r"-0(\.0+)?%")


@given(st.floats(min_value=-0.004999, max_value=0.0))
def test_whole_percent_share_is_never_negative_zero(ratio: float) -> None:
    assert numbers.share(ratio) == "0%"


@given(st.floats(min_value=0.0, max_value=0.999), st.integers(0, 3))
def test_percent_is_never_negative_zero(fraction: float, digits: int) -> None:
    ratio = -fraction * 0.5 * 10 ** -(digits + 2)  # rounds to zero at ``digits`` decimals
    text = numbers.percent(ratio, digits)
    assert not NEGATIVE_ZERO.fullmatch(text), text
    assert float(text.rstrip("%")) == 0.0


def test_tail_cells_and_sentences_have_no_negative_zero() -> None:
    shares = (("retry", 0.0), ("network", -0.003), ("tokenization", -0.0), ("queue", 0.9),
              ("prefill", 0.1), (OTHER, -0.001))  # fmt: skip
    s = TailShare("chat", "ttft", "p95", 30, 2.0, shares)
    text = " ".join(tail.cells(s)) + " " + tail.sentence(s, None)
    assert not NEGATIVE_ZERO.search(text), text
    assert tail.cells(s)[1] == "0%"
