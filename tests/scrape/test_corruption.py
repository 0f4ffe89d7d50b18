"""Random corruption of valid pages: only a ScrapeError or valid signals, never a crash or a negative count."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.errors import ScrapeError
from monitor.scrape.collector import read_text
from monitor.scrape.interval import signals
from monitor.scrape.signals import EngineSignals
from tests.scrape.conftest import page_text

BASE = page_text("vllm-0.33-3models-2engines.metrics.txt")
SGL = page_text("sglang-0.5.23.multiprocess.metrics.txt")
OLDER = read_text(BASE, 1.0)


def _non_negative(e: EngineSignals) -> None:
    for v in (e.prompt_tokens, e.generation_tokens, e.preemptions, e.running, e.waiting, e.spec_drafts,
              e.prefix_cache_queries, e.prefix_cache_hits, *e.finished.values()):  # fmt: skip
        assert v is None or v >= 0
    for h in e.histograms.values():
        assert h.count >= 0 and h.sum >= 0 and all(c >= 0 for c in h.counts)


def _check(text: str) -> None:
    try:
        newer = read_text(text, 2.0)
    except ScrapeError as exc:
        assert exc.reason in ("garbled", "truncated", "empty")
        return
    for s in (signals("e", newer), signals("e", newer, OLDER)):
        _non_negative(s.total)
        for e in s.engines.values():
            _non_negative(e)
        s.to_dict((0.5,))


def _mutate(text: str, op: str, pos: float, count: int, byte: int) -> str:
    lines = text.split("\n")
    i = int(pos * (len(lines) - 1))
    if op == "truncate":
        return text[: int(pos * len(text))]
    if op == "flip":
        j = int(pos * (len(text) - 1))
        return text[:j] + chr(byte) + text[j + 1 :]
    if op == "duplicate":
        return "\n".join(lines[: i + 1] + lines[i : i + count] + lines[i + 1 :])
    if op == "drop":
        return "\n".join(lines[:i] + lines[i + count :])
    return "\n".join([*lines[:i], lines[i].replace("0", str(byte % 10)), *lines[i + 1 :]])


corruption = st.tuples(
    st.sampled_from(["truncate", "flip", "duplicate", "drop", "digit"]),
    st.floats(0, 1),
    st.integers(1, 5),
    st.integers(0, 255),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(corruption, min_size=1, max_size=3), st.booleans())
def test_corrupted_pages_never_crash(ops: list[tuple[str, float, int, int]], sglang: bool) -> None:
    text = SGL if sglang else BASE
    for op in ops:
        text = _mutate(text, *op)
    _check(text)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    _check(data.decode("latin-1"))
