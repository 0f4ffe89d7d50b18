"""Verdicts from recorded exchanges: one category per way an HTTP 200 can still be wrong."""

from __future__ import annotations

import pytest

from monitor.probes.exchange import Exchange
from monitor.probes.judge import expect_word, is_degenerate, judge_answer, leaked_marker
from monitor.probes.stream import sse_events
from monitor.probes.tool_call import check_tool_call, judge_tool_turn
from monitor.probes.transcript import ToolCallDraft, Transcript
from tests.probes.sse_fixtures import DONE, MODEL, chunk, ready_stream, timed, usage_chunk


def exchange(frames: list[bytes], failure: str | None = None) -> Exchange:
    t = Transcript().extend(sse_events(timed(frames)))
    return Exchange(started=99.0, sent=99.5, end=101.0, transcript=t, status=200, failure=failure)


ROLE = chunk({"role": "assistant", "content": ""})


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        (ready_stream(), None),
        (ready_stream(model="other/model"), "wrong_model"),
        (ready_stream()[:3], "stream_broken"),  # no finish, no [DONE]
        (ready_stream()[:4], "stream_broken"),  # finish but no [DONE]
        ([ROLE, chunk({"content": ""}, "stop"), usage_chunk(3, 0), DONE], "empty_output"),
        ([ROLE, chunk({"content": "Rea"}, "length"), usage_chunk(3, 16), DONE], "truncated"),
        ([ROLE, chunk({"content": "<mm:think>hm</mm:think>ready"}, "stop"), usage_chunk(3, 5), DONE], "parser_leak"),
        ([ROLE, chunk({"content": "]<]minimax[>[<tool_call>"}, "stop"), usage_chunk(3, 5), DONE], "parser_leak"),
        ([ROLE, chunk({"content": "and then the answer is " * 8}, "stop"), usage_chunk(3, 40), DONE],
         "degenerate_output"),
        ([ROLE, chunk({"content": "ready"}, "stop"), DONE], "missing_usage"),
        ([ROLE, b'data: {"error": {"message": "boom"}}\n\n'], "stream_broken"),
    ],
)  # fmt: skip
def test_shared_checks(frames: list[bytes], reason: str | None) -> None:
    assert judge_answer(exchange(frames), MODEL).reason == reason


def test_transport_failure_wins() -> None:
    assert judge_answer(exchange(ready_stream(), failure="timeout"), MODEL).reason == "timeout"


def test_expect_word_and_markers() -> None:
    assert expect_word("Ready.", "ready").ok
    assert expect_word("already", "ready").reason == "wrong_answer"
    assert leaked_marker("ok </mm:think>") == "</mm:think>"
    assert leaked_marker("fine") is None


@pytest.mark.parametrize(
    ("text", "degenerate"),
    [
        ("////////////////////", True),
        ("the the the the the the the the the", True),
        ("ha" * 30, True),
        ("Ready.", False),
        ("Prefix caching avoids recomputing the shared part of long prompts.", False),
        ("The secret code is 48213.", False),
    ],
)
def test_degenerate(text: str, degenerate: bool) -> None:
    assert is_degenerate(text) is degenerate


@pytest.mark.parametrize(
    ("call", "ok"),
    [
        (ToolCallDraft("c", "get_weather", '{"city": "Paris", "unit": "celsius"}'), True),
        (ToolCallDraft("c", "get_weather", '{"city": "Paris", "unit": "celsius"'), False),
        (ToolCallDraft("c", "get_weather", '{"city": "Paris"}'), False),
        (ToolCallDraft("c", "get_weather", '{"city": "Paris", "unit": "kelvin"}'), False),
        (ToolCallDraft("c", "other", '{"city": "Paris", "unit": "celsius"}'), False),
        (None, False),
    ],
)
def test_tool_call_schema(call: ToolCallDraft | None, ok: bool) -> None:
    verdict = check_tool_call(call)
    assert verdict.ok is ok
    assert verdict.reason in (None, "malformed_tool_call")


def test_tool_turn_needs_finish_reason_tool_calls() -> None:
    call = {"index": 0, "id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo", "unit": "celsius"}'}}  # fmt: skip
    good = [ROLE, chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), usage_chunk(40, 20), DONE]
    assert judge_tool_turn(exchange(good), MODEL).ok
    stop = [ROLE, chunk({"tool_calls": [call]}), chunk({}, "stop"), usage_chunk(40, 20), DONE]
    assert judge_tool_turn(exchange(stop), MODEL).reason == "malformed_tool_call"
