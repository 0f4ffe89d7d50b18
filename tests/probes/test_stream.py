"""The SSE decoder and the chat transcript, fed recorded byte streams split in awkward places."""

from __future__ import annotations

from monitor.probes.stream import SseDecoder, sse_events
from monitor.probes.transcript import Transcript
from tests.probes.sse_fixtures import DONE, chunk, ready_stream, timed, usage_chunk


def transcript_of(pairs: list[tuple[float, bytes]]) -> Transcript:
    return Transcript().extend(sse_events(pairs))


def test_events_keep_arrival_time_of_their_last_byte() -> None:
    raw = b"".join(ready_stream())
    # one byte at a time, each at its own time: an event's time is that of its final byte
    pairs = [(float(i), raw[i : i + 1]) for i in range(len(raw))]
    events = list(sse_events(pairs))
    assert len(events) == 6
    assert events[-1].is_done
    ends = [i for i in range(1, len(raw)) if raw[i - 1 : i + 1] == b"\n\n"]
    assert [e.at for e in events] == [float(i) for i in ends]


def test_crlf_comments_multiline_data_and_event_names() -> None:
    raw = b': keep-alive\r\n\r\nevent: x\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: [DONE]\r\n\r\n'
    events = list(sse_events([(1.0, raw[:7]), (2.0, raw[7:30]), (3.0, raw[30:])]))
    assert [(e.event, e.data) for e in events] == [("x", '{"a":\n1}'), (None, "[DONE]")]


def test_cut_off_event_is_not_yielded_and_reported_pending() -> None:
    decoder = SseDecoder()
    raw = b"".join(ready_stream())[:-9]
    events = list(decoder.feed(1.0, raw))
    assert not any(e.is_done for e in events)
    assert decoder.pending > 0


def test_transcript_collects_answer_model_usage_and_token_chunks() -> None:
    t = transcript_of(timed(ready_stream()))
    assert (t.content, t.model, t.finish_reason, t.done) == ("Ready.", "MiniMaxAI/MiniMax-M3", "stop", True)
    assert t.usage_int("completion_tokens") == 2
    assert [c.at for c in t.chunks] == [100.01, 100.02]  # role-only and empty finish chunks are no tokens
    assert t.first() == t.first("answer") == 100.01 and t.first("reasoning") is None


def test_reasoning_under_either_key_and_not_twice() -> None:
    frames = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning": "Let me", "reasoning_content": "Let me"}),
        chunk({"reasoning_content": " think."}),
        chunk({"content": "ready"}),
        chunk({}, "stop"),
        usage_chunk(5, 4, reasoning=3),
        DONE,
    ]
    t = transcript_of(timed(frames))
    assert t.reasoning == "Let me think." and t.content == "ready"
    assert [c.channel for c in t.chunks] == ["reasoning", "reasoning", "answer"]
    assert t.first("reasoning") == 100.01 and t.first("answer") == 100.03


def test_tool_call_fragments_are_joined() -> None:
    frames = [
        chunk({"role": "assistant", "content": ""}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": '},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        chunk({}, "tool_calls"),
        DONE,
    ]
    t = transcript_of(timed(frames))
    (call,) = t.calls()
    assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", '{"city": "Paris"}')


def test_running_usage_gives_tokens_per_chunk_and_bad_json_is_counted() -> None:
    frames = [
        chunk({"role": "assistant", "content": ""}, usage={"prompt_tokens": 3, "completion_tokens": 0}),
        chunk({"content": "a"}, usage={"prompt_tokens": 3, "completion_tokens": 1}),
        chunk({"content": "bcd"}, usage={"prompt_tokens": 3, "completion_tokens": 4}),
        b"data: {not json\n\n",
        chunk({}, "stop"),
        DONE,
    ]
    t = transcript_of(timed(frames))
    assert [c.tokens for c in t.chunks] == [1, 3]
    assert t.bad_events == 1


def test_error_event_is_recorded() -> None:
    frames = [chunk({"role": "assistant", "content": ""}),
              b'data: {"error": {"message": "engine error", "code": 500}}\n\n']  # fmt: skip
    assert transcript_of(timed(frames)).error == "engine error"
