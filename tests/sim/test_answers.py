"""Reasoning, tool calls, images and needles, as a monitor's probes would check them."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import openai
import pytest

from tests.sim.conftest import MODEL, png_data_url

pytestmark = pytest.mark.timeout(60)

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "detail": {
                    "type": "object",
                    "properties": {"wind": {"type": "boolean"}},
                    "required": ["wind"],
                },
            },
            "required": ["city", "unit", "days", "detail"],
        },
    },
}
LONG_Q = "Please explain in some detail why prefix caching reduces time to first token for chat workloads."


def test_reasoning_modes(client: openai.OpenAI) -> None:
    on = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                        extra_body={"chat_template_kwargs": {"thinking_mode": "enabled"}})  # fmt: skip
    msg = on.choices[0].message.model_dump()
    assert msg["reasoning"] and msg["reasoning_content"] == msg["reasoning"] and msg["content"]
    assert on.usage is not None and on.usage.completion_tokens_details is not None
    assert on.usage.completion_tokens_details.reasoning_tokens == 48
    off = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": LONG_Q}],
                                         extra_body={"chat_template_kwargs": {"thinking_mode": "disabled"}})  # fmt: skip
    assert off.choices[0].message.model_dump().get("reasoning") is None
    adaptive = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": LONG_Q}])
    assert adaptive.choices[0].message.model_dump()["reasoning"]
    trivial = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Return the word ready."}]
    )
    assert trivial.choices[0].message.model_dump().get("reasoning") is None


def test_reasoning_streams_before_content(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": LONG_Q}],
                                                 stream=True))  # fmt: skip
    kinds = []
    for c in chunks:
        d = c.choices[0].delta.model_dump() if c.choices else {}
        if d.get("reasoning"):
            kinds.append("r")
        elif d.get("content"):
            kinds.append("c")
    assert kinds and kinds[0] == "r" and "c" in kinds
    assert kinds == sorted(kinds, key=lambda k: k == "c")


def test_tool_call_non_streaming(client: openai.OpenAI) -> None:
    r = client.chat.completions.create(model=MODEL, tools=[WEATHER],  # type: ignore[list-item]
                                       messages=[{"role": "user", "content": "What is the weather in Paris?"}])  # fmt: skip
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]  # type: ignore[index]
    assert call.type == "function" and call.function.name == "get_weather"  # type: ignore[union-attr]
    args = json.loads(call.function.arguments)  # type: ignore[union-attr]
    jsonschema.validate(args, WEATHER["function"]["parameters"])
    assert args["city"] == "Paris"
    assert "]<]minimax[>[" not in (choice.message.content or "")
    follow = client.chat.completions.create(model=MODEL, tools=[WEATHER], messages=[  # type: ignore[list-item]
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 21}'},
    ])  # fmt: skip
    assert follow.choices[0].finish_reason == "stop"
    assert '{"temperature": 21}' in (follow.choices[0].message.content or "")


def test_tool_call_streaming_arrives_whole(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model=MODEL, tools=[WEATHER], stream=True,  # type: ignore[list-item]
                                                 messages=[{"role": "user", "content": "Weather in Oslo?"}]))  # fmt: skip
    deltas = [c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert len(deltas) == 1
    call = deltas[0][0]
    assert call.index == 0 and call.id and call.function is not None
    jsonschema.validate(json.loads(call.function.arguments or ""), WEATHER["function"]["parameters"])
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_tool_choice_none_answers(client: openai.OpenAI) -> None:
    r = client.chat.completions.create(model=MODEL, tools=[WEATHER], tool_choice="none",  # type: ignore[list-item]
                                       messages=[{"role": "user", "content": "Return the word ready."}])  # fmt: skip
    assert r.choices[0].finish_reason == "stop" and r.choices[0].message.content == "ready"


@pytest.mark.parametrize(
    ("rgb", "name"), [((230, 20, 20), "red"), ((20, 40, 230), "blue"), ((250, 250, 250), "white")]
)
def test_image_colour_and_prompt_tokens(client: openai.OpenAI, rgb: tuple[int, int, int], name: str) -> None:
    content = [{"type": "text", "text": "What colour is this image? One word."},
               {"type": "image_url", "image_url": {"url": png_data_url(rgb, (112, 56))}}]  # fmt: skip
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": content}])  # type: ignore[misc,list-item]
    assert r.choices[0].message.content == name
    plain = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": content[0]["text"]}]
    )  # type: ignore[index]
    assert r.usage is not None and plain.usage is not None
    assert r.usage.prompt_tokens - plain.usage.prompt_tokens == (112 // 28) * (56 // 28)


def test_bad_image_is_400(client: openai.OpenAI) -> None:
    bad = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": bad}])  # type: ignore[misc,list-item]


def test_needle_comes_back(client: openai.OpenAI) -> None:
    filler = "The sky was calm and the river moved slowly past the old mill. " * 300
    text = filler + "The secret code is TANGO-42. " + filler + "\nWhat is the secret code?"
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}],
                                       extra_body={"chat_template_kwargs": {"thinking_mode": "disabled"}})  # fmt: skip
    assert "TANGO-42" in (r.choices[0].message.content or "")
    assert r.usage is not None and r.usage.prompt_tokens > 8000
