"""The OpenAI-compatible surface, driven by the official ``openai`` client and raw HTTP."""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest

from monitor.sim.harness import SimHandle, running_simulator
from tests.sim.conftest import FAST, HTTP, MODEL, ask

pytestmark = pytest.mark.timeout(60)


def test_ready_non_streaming(client: openai.OpenAI) -> None:
    r = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Return the word ready."}]
    )
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert r.choices[0].message.content == "ready"
    assert r.choices[0].finish_reason == "stop"
    assert r.usage is not None and r.usage.completion_tokens == 2
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_streaming_shape(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Say hello"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    first = chunks[0].choices[0].delta
    assert first.role == "assistant" and not first.content
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finals == ["stop"]
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens >= len(text.split())


def test_raw_sse_ends_with_done(sim: SimHandle) -> None:
    with HTTP.stream("POST", f"{sim.base_url}/v1/chat/completions", json=ask("Hi", stream=True)) as r:
        lines = [line for line in r.iter_lines() if line]
    assert r.headers["content-type"].startswith("text/event-stream")
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    assert json.loads(lines[0][6:])["object"] == "chat.completion.chunk"


def test_completions(client: openai.OpenAI) -> None:
    r = client.completions.create(model=MODEL, prompt="Return the word ready.", max_tokens=8)
    assert r.object == "text_completion" and r.choices[0].text == "ready"
    streamed = list(
        client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=5, stream=True)
    )
    assert sum(len(c.choices[0].text) for c in streamed if c.choices) > 0
    assert streamed[-1].choices[0].finish_reason == "length"


def test_models_version_load(sim: SimHandle) -> None:
    models = HTTP.get(f"{sim.base_url}/v1/models").json()
    card = models["data"][0]
    assert models["object"] == "list" and card["id"] == MODEL and card["max_model_len"] == 131072
    assert card["owned_by"] == "vllm" and card["permission"][0]["object"] == "model_permission"
    assert HTTP.get(f"{sim.base_url}/version").json() == {"version": "0.33.0"}
    assert HTTP.get(f"{sim.base_url}/load").json() == {"server_load": 0}


def test_context_overflow_is_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=131072
        )
    assert "This model's maximum context length is 131072 tokens" in str(exc.value)
    body = exc.value.response.json()
    assert body["error"]["code"] == 400 and body["error"]["type"] == "BadRequestError"


def test_unknown_model_and_bad_body(sim: SimHandle) -> None:
    r = HTTP.post(f"{sim.base_url}/v1/chat/completions", json={**ask("x"), "model": "other"})
    assert r.status_code == 404 and "does not exist" in r.json()["error"]["message"]
    assert HTTP.post(f"{sim.base_url}/v1/chat/completions", content=b"{nope").status_code == 400
    assert HTTP.post(f"{sim.base_url}/v1/chat/completions", json={"messages": []}).status_code == 400


def test_api_key() -> None:
    with running_simulator(api_key="s3cret", **FAST) as sim:
        assert HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ask("x")).status_code == 401
        assert HTTP.get(f"{sim.base_url}/v1/models").json() == {"error": "Unauthorized"}
        ok = HTTP.get(f"{sim.base_url}/v1/models", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert HTTP.get(f"{sim.base_url}/health").status_code == 200
        assert HTTP.get(f"{sim.base_url}/metrics").status_code == 200


def test_health_loading_then_ready() -> None:
    with running_simulator(startup_delay=0.4, **FAST) as sim:
        assert HTTP.get(f"{sim.base_url}/health").status_code == 503
        assert HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ask("x")).status_code == 503
        deadline = time.monotonic() + 5
        while HTTP.get(f"{sim.base_url}/health").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ask("x")).status_code == 200


def _running_one(page: str) -> str:
    """The page's ``vllm:num_requests_running`` line when it reads 1, else an empty string."""
    return next((ln for ln in page.splitlines()
                 if ln.startswith("vllm:num_requests_running{") and ln.endswith(" 1.0")), "")  # fmt: skip


def test_queue_full_is_429() -> None:
    """One request running, one queued (max_queue=1): the others are refused with 429."""
    import concurrent.futures as cf

    with running_simulator(max_num_seqs=1, max_queue=1, decode_itl=0.05, jitter=0.0) as sim:
        body = ask("Write a long essay about queues.", max_tokens=40, ignore_eos=True)
        with httpx.Client(base_url=sim.base_url, timeout=20) as c, cf.ThreadPoolExecutor(4) as pool:
            first = pool.submit(lambda: c.post("/v1/chat/completions", json=body).status_code)
            deadline = time.monotonic() + 10  # wait until it runs: it no longer holds the queue slot
            while "vllm:num_requests_running{" not in _running_one(c.get("/metrics").text):
                assert time.monotonic() < deadline, "the first request never started"
                time.sleep(0.02)
            rest = [pool.submit(lambda: c.post("/v1/chat/completions", json=body).status_code)
                    for _ in range(3)]  # fmt: skip
            codes = sorted([first.result(), *(f.result() for f in rest)])
        assert codes.count(429) >= 1 and codes.count(200) >= 2, codes
        r = HTTP.get(f"{sim.base_url}/metrics").text
        assert (
            'vllm:admission_rejections_total{model_name="MiniMaxAI/MiniMax-M3",reason="max_num_queued_reqs"}'
            in r
        )


def test_per_request_metrics() -> None:
    with running_simulator(enable_per_request_metrics=True, **FAST) as sim:
        body = HTTP.post(
            f"{sim.base_url}/v1/chat/completions", json=ask("Tell me about caching please")
        ).json()
        m = body["metrics"]
        assert set(m) == {"time_to_first_token_ms", "generation_time_ms", "queue_time_ms", "mean_itl_ms",
                          "tokens_per_second"}  # fmt: skip
        assert m["time_to_first_token_ms"] >= 0 and m["tokens_per_second"] > 0
        with HTTP.stream("POST", f"{sim.base_url}/v1/chat/completions",
                          json=ask("hi there", stream=True, stream_options={"include_usage": True})) as r:  # fmt: skip
            data = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
        assert data[-1]["choices"] == [] and data[-1]["metrics"]["queue_time_ms"] >= 0
