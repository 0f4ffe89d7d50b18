"""Verdicts: does a probe's exchange count as a success, and if not, which failure category.

The checks run in a fixed order, so one exchange always gets one category: transport first
(``connect_error``, ``timeout``, ``http_status``, ``context_rejected``), then stream integrity
(``stream_broken``), identity (``wrong_model``), parser health (``parser_leak``), then the shape
of the answer (``empty_output``, ``degenerate_output`` — a loop usually runs into the token
limit, so it is named before ``truncated`` — then ``truncated``), accounting
(``missing_usage``), and last the kind's own checks (``malformed_tool_call``, ``wrong_answer``).
An HTTP 200 whose answer fails any of these is a failure.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from monitor.conventions import FAILURE_CATEGORIES, PARSER_MARKERS
from monitor.probes.exchange import Exchange

#: A short unit (under 8 characters) six times in a row, or a phrase (8-80 characters) twice.
_REPEATS = (re.compile(r"(.{1,7}?)\1{5,}", re.DOTALL), re.compile(r"(.{8,80}?)\1+", re.DOTALL))


@dataclass(frozen=True)
class Verdict:
    """A failure category (None for success) and one line saying why."""

    reason: str | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        if self.reason is not None and self.reason not in FAILURE_CATEGORIES:
            raise ValueError(f"unknown failure category {self.reason!r}")

    @property
    def ok(self) -> bool:
        return self.reason is None


OK = Verdict()


def leaked_marker(text: str) -> str | None:
    """The first raw MiniMax parser marker found in ``text``, if any."""
    return next((m for m in PARSER_MARKERS if m in text), None)


def is_degenerate(text: str) -> bool:
    """True for looping or junk output: a unit repeated over most of the text, or one word dominating.

    Probe answers are short (16 tokens), so a phrase seen twice in a row over 60 % of the text
    already counts; a real answer does not repeat itself verbatim.
    """
    stripped = text.strip()
    if len(stripped) < 12:
        return False
    for pattern in _REPEATS:
        match = pattern.search(stripped)
        if match is not None and len(match.group(0)) >= 0.6 * len(stripped):
            return True
    if len(set(stripped.replace(" ", ""))) <= 2:
        return True
    words = stripped.split()
    if len(words) >= 8:
        _, top = Counter(w.lower() for w in words).most_common(1)[0]
        return top / len(words) >= 0.6
    return False


def judge_transport(ex: Exchange) -> Verdict:
    """Failures before or while reading the stream."""
    if ex.failure is not None:
        return Verdict(ex.failure, ex.detail)
    t = ex.transcript
    if t.error is not None:
        return Verdict("stream_broken", f"error event in stream: {t.error}")
    if t.finish_reason is None or not t.done or ex.leftover_bytes:
        what = "no finish_reason" if t.finish_reason is None else "no [DONE]"
        return Verdict("stream_broken", f"stream ended early ({what}, {ex.leftover_bytes} bytes cut off)")
    return OK


def judge_answer(
    ex: Exchange,
    expected_model: str,
    *,
    allow_empty_content: bool = False,
    allow_length: bool = False,
    require_usage: bool = True,
) -> Verdict:
    """Every check shared by all kinds, in the documented order."""
    verdict = judge_transport(ex)
    if not verdict.ok:
        return verdict
    t = ex.transcript
    if t.model != expected_model:
        return Verdict("wrong_model", f"model {t.model!r} != {expected_model!r}")
    marker = leaked_marker(t.content) or leaked_marker(t.reasoning)
    if marker is not None:
        return Verdict("parser_leak", f"raw parser marker {marker!r} in the answer")
    if not t.content.strip() and not t.tool_calls and not allow_empty_content:
        if t.finish_reason == "length":
            return Verdict("truncated", "finish_reason length before any answer (budget spent reasoning)")
        return Verdict("empty_output", f"no content and no tool call (finish_reason {t.finish_reason})")
    if is_degenerate(t.content) or is_degenerate(t.reasoning):  # before truncated: loops run to the limit
        return Verdict("degenerate_output", f"repetitive output: {t.content.strip()[:60]!r}")
    if t.finish_reason == "length" and not allow_length:
        return Verdict("truncated", "finish_reason length: the answer was cut off")
    if require_usage:
        missing = [k for k in ("prompt_tokens", "completion_tokens") if t.usage_int(k) is None]
        if missing:
            return Verdict("missing_usage", f"usage lacks {', '.join(missing)}")
    return OK


def expect_word(text: str, word: str) -> Verdict:
    """``wrong_answer`` unless ``word`` appears in ``text`` (case-insensitive, whole word)."""
    if re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE):
        return OK
    return Verdict("wrong_answer", f"expected {word!r}, got {text.strip()[:60]!r}")
