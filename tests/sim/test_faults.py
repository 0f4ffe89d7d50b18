"""Every fault produces its observable symptom, and the admin endpoint validates input."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import openai
import pytest

from monitor.sim.faults import FaultError, parse_faults
from monitor.sim.harness import SimHandle, running_simulator
from tests.sim.conftest import FAST, HTTP, MODEL, ask, value
from tests.sim.test_answers import WEATHER

pytestmark = pytest.mark.timeout(60)


def _chat(sim: SimHandle, **extra: Any) -> httpx.Response:
    return HTTP.post(
        f"{sim.base_url}/v1/chat/completions", json=ask("Tell me about the sea", **extra), timeout=20
    )


def test_admin_endpoint_merges_validates_clears(sim: SimHandle) -> None:
    url = f"{sim.base_url}/sim/faults"
    assert HTTP.post(url, json={"latency_multiplier": 2}).json()["active"] == {"latency_multiplier": 2.0}
    assert HTTP.post(url, json={"empty_output": True}).json()["active"] == {"latency_multiplier": 2.0,
                                                                             "empty_output": True}  # fmt: skip
    bad = HTTP.post(url, json={"no_such_fault": 1})
    assert bad.status_code == 400 and "no_such_fault" in bad.json()["error"]["message"]
    assert HTTP.post(url, json={"error_rate": 3}).status_code == 400
    assert HTTP.post(url, content=b"not json").status_code == 400
    assert HTTP.get(url).json()["active"] == {"latency_multiplier": 2.0, "empty_output": True}
    assert HTTP.delete(url).json()["active"] == {}
    with pytest.raises(FaultError):
        parse_faults('{"restart": true}')


def test_error_rate(sim: SimHandle) -> None:
    sim.set_faults(error_rate=1.0, error_status=503)
    r = _chat(sim)
    assert r.status_code == 503 and r.json()["error"]["code"] == 503
    assert value(sim.base_url, "http_requests_total", status="5xx") == 1


def test_latency_multiplier_slows_decode(sim: SimHandle) -> None:
    base = _chat(sim, max_tokens=30, ignore_eos=True).elapsed.total_seconds()
    sim.set_faults(latency_multiplier=10)
    slow = _chat(sim, max_tokens=30, ignore_eos=True).elapsed.total_seconds()
    assert slow > 3 * base


def test_brownout_queue_stall_and_prefill(sim: SimHandle) -> None:
    sim.set_faults(brownout_queue_stall=True)
    with pytest.raises(httpx.ReadTimeout):
        HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ask("hi"), timeout=0.3)
    assert value(sim.base_url, "vllm:num_requests_waiting") >= 1
    sim.clear_faults()
    sim.set_faults(brownout_prefill_factor=200)
    r = _chat(sim).json()
    t = next(x for x in sim.truth()["requests"] if x["id"] == r["id"])
    assert t["first_token"]["mono"] - t["scheduled"]["mono"] > 0.01


def test_engine_freeze_stops_tokens_behind_a_healthy_health_check(sim: SimHandle) -> None:
    """A frozen engine: the open stream gets nothing more, a new request waits, every token counter
    stands still, /health says 200; clearing the fault lets both finish."""
    url, lines, answers = f"{sim.base_url}/v1/chat/completions", list[str](), list[int]()
    counters = ("vllm:generation_tokens_total", "vllm:prompt_tokens_total")

    def stream() -> None:
        body = ask("Tell me about the sea", stream=True, max_tokens=400, ignore_eos=True)
        with HTTP.stream("POST", url, json=body) as r:
            lines.extend(line for line in r.iter_lines() if line.startswith("data: "))

    def later() -> None:
        answers.append(HTTP.post(url, json=ask("hi"), timeout=20).status_code)

    readers = [threading.Thread(target=stream, daemon=True), threading.Thread(target=later, daemon=True)]
    readers[0].start()
    while not lines and readers[0].is_alive():
        time.sleep(0.002)
    sim.set_faults(engine_freeze=True)
    time.sleep(0.1)  # the step in flight ends
    readers[1].start()
    seen, counted = len(lines), [value(sim.base_url, n) for n in counters]
    time.sleep(0.5)
    assert len(lines) == seen and "data: [DONE]" not in lines
    assert [value(sim.base_url, n) for n in counters] == counted
    assert HTTP.get(f"{sim.base_url}/health").status_code == 200
    assert value(sim.base_url, "vllm:num_requests_running") == 1
    assert value(sim.base_url, "vllm:num_requests_waiting") == 1
    sim.clear_faults()
    for t in readers:
        t.join(20)
    assert lines[-1] == "data: [DONE]" and answers == [200]
    assert value(sim.base_url, "vllm:generation_tokens_total") >= counted[0] + 300


def test_midstream_disconnect(sim: SimHandle) -> None:
    sim.set_faults(midstream_disconnect=3)
    got: list[str] = []
    url = f"{sim.base_url}/v1/chat/completions"
    with pytest.raises(httpx.RemoteProtocolError), HTTP.stream("POST", url, json=ask("hi", stream=True)) as r:
        got.extend(r.iter_lines())
    assert len([g for g in got if g.startswith("data: ")]) == 3
    assert "data: [DONE]" not in got


def test_empty_truncated_degenerate(sim: SimHandle) -> None:
    sim.set_faults(empty_output=True)
    assert _chat(sim).json()["choices"][0]["message"]["content"] is None
    sim.clear_faults()
    sim.set_faults(truncated_output=3)
    body = _chat(sim).json()
    assert body["choices"][0]["finish_reason"] == "length" and body["usage"]["completion_tokens"] == 3
    sim.clear_faults()
    sim.set_faults(degenerate_output=True)
    text = _chat(sim).json()["choices"][0]["message"]["content"]
    assert text.count("and then the answer is") >= 10


def test_malformed_tool_call(sim: SimHandle) -> None:
    import jsonschema

    body = {"model": MODEL, "tools": [WEATHER], "messages": [{"role": "user", "content": "Weather in Rome?"}]}
    url = f"{sim.base_url}/v1/chat/completions"
    sim.set_faults(malformed_tool_call="invalid_json")
    args = HTTP.post(url, json=body).json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(args)
    sim.set_faults(malformed_tool_call="schema_mismatch")
    args = HTTP.post(url, json=body).json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(args), WEATHER["function"]["parameters"])


def test_parser_leak(sim: SimHandle) -> None:
    sim.set_faults(parser_leak=True)
    body = {"model": MODEL, "tools": [WEATHER], "messages": [{"role": "user", "content": "Weather in Rome?"}]}
    msg = HTTP.post(f"{sim.base_url}/v1/chat/completions", json=body).json()["choices"][0]["message"]
    assert "]<]minimax[>[<tool_call>" in msg["content"] and "<mm:think>" in msg["content"]
    assert msg["tool_calls"] == []


def test_wrong_model(sim: SimHandle, client: openai.OpenAI) -> None:
    sim.set_faults(wrong_model="Qwen/Qwen3-8B")
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert r.model == "Qwen/Qwen3-8B"
    assert HTTP.get(f"{sim.base_url}/v1/models").json()["data"][0]["id"] == "Qwen/Qwen3-8B"


def test_health_ok_completions_fail_and_dead(sim: SimHandle) -> None:
    sim.set_faults(health_ok_completions_fail=True)
    assert HTTP.get(f"{sim.base_url}/health").status_code == 200
    assert _chat(sim).status_code == 500
    sim.clear_faults()
    sim.set_faults(dead=True)
    assert HTTP.get(f"{sim.base_url}/health").status_code == 503
    assert _chat(sim).status_code == 500
    sim.clear_faults()
    assert HTTP.get(f"{sim.base_url}/health").status_code == 200


def test_restart_resets_counters(sim: SimHandle) -> None:
    _chat(sim)
    _chat(sim)
    assert value(sim.base_url, "vllm:request_success_total") == 2
    start_before = value(sim.base_url, "process_start_time_seconds")
    created_before = value(sim.base_url, "vllm:prompt_tokens_created")
    r = HTTP.post(f"{sim.base_url}/sim/faults", json={"restart": True})
    assert r.status_code == 200 and r.json()["active"] == {}
    assert value(sim.base_url, "vllm:request_success_total") == 0
    assert value(sim.base_url, "process_start_time_seconds") > start_before
    assert value(sim.base_url, "vllm:prompt_tokens_created") > created_before
    assert sim.truth()["restarts"] == 1


def test_faults_from_start() -> None:
    with running_simulator(faults='{"dead": true}', **FAST) as sim:
        assert HTTP.get(f"{sim.base_url}/health").status_code == 503
