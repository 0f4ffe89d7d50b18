"""The repeat filter on a real logging handler, with a hand-driven clock: every distinct warning is
logged once, then once per summary window with the count it held back; the counts add up."""

from __future__ import annotations

import io
import itertools
import logging
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.service.repeats import RepeatFilter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def logger() -> Iterator[tuple[logging.Logger, io.StringIO, RepeatFilter, Clock]]:
    clock, stream = Clock(), io.StringIO()
    repeats = RepeatFilter(summary_every=600.0, clock=clock)
    handler = logging.StreamHandler(stream)
    handler.addFilter(repeats)
    lg = logging.getLogger("tests.repeats")
    lg.setLevel(logging.INFO)
    lg.addHandler(handler)
    lg.propagate = False
    try:
        yield lg, stream, repeats, clock
    finally:
        lg.removeHandler(handler)


@settings(max_examples=40, deadline=None)
@given(gaps=st.lists(st.floats(0.5, 120.0), min_size=1, max_size=60), seconds=st.floats(0.1, 9.9))
def test_each_warning_is_logged_once_per_window_and_every_one_is_counted(
    gaps: list[float], seconds: float
) -> None:
    clock, stream = Clock(), io.StringIO()
    repeats = RepeatFilter(summary_every=600.0, clock=clock)
    handler = logging.StreamHandler(stream)
    handler.addFilter(repeats)
    lg = logging.getLogger("tests.repeats.prop")
    lg.addHandler(handler)
    lg.propagate = False
    times, logged_at = [], []
    try:
        for gap in gaps:
            clock.now += gap
            times.append(clock.now)
            # a numeric argument (how long) does not make a warning different; the endpoint does
            lg.warning("scrape %s failed after %.1f s", "pool-a", seconds)
            if not logged_at or clock.now - logged_at[-1] >= 600.0:
                logged_at.append(clock.now)
    finally:
        lg.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert len(lines) == len(logged_at)  # the oracle: the first, then one per 10 minutes at most
    assert lines[0] == f"scrape pool-a failed after {seconds:.1f} s"
    held = [int(ln.split("[repeated ")[1].split()[0]) for ln in lines[1:]]
    expected = [sum(1 for t in times if a < t < b) for a, b in itertools.pairwise(logged_at)]
    assert held == expected
    key = ("tests.repeats.prop", "test_each_warning_is_logged_once_per_window_and_every_one_is_counted")
    assert repeats.warnings[key] == len(gaps)
    assert repeats.suppressed.get(key, 0) == len(gaps) - len(lines)


def test_distinct_warnings_and_info_lines_pass(
    logger: tuple[logging.Logger, io.StringIO, RepeatFilter, Clock],
) -> None:
    lg, stream, repeats, clock = logger
    for _ in range(3):
        clock.now += 1
        lg.warning("scrape %s failed", "pool-a", extra={"kind": "scrape_failed"})
        lg.warning("scrape %s failed", "pool-b", extra={"kind": "scrape_failed"})
        lg.warning("stale %s", "x")
        lg.error("stale %s", "x")
        lg.info("ok")  # below WARNING: never held back (nor counted)
    for exc in (ValueError("a"), ValueError("a"), KeyError("b")):
        try:
            raise exc
        except (LookupError, ValueError):
            lg.exception("job %s failed", "evaluate")
    lines = [
        ln
        for ln in stream.getvalue().splitlines()
        if not ln.startswith(("Traceback", "  ", "ValueError", "KeyError"))
    ]
    assert lines == [
        "scrape pool-a failed",
        "scrape pool-b failed",
        "stale x",
        "stale x",  # the error is not the warning's repeat
        "ok",
        "ok",
        "ok",
        "job evaluate failed",  # ValueError('a')
        "job evaluate failed",  # KeyError('b'): another exception, logged too
    ]
    assert repeats.warnings[("tests.repeats", "scrape_failed")] == 6
    assert repeats.suppressed[("tests.repeats", "scrape_failed")] == 4
