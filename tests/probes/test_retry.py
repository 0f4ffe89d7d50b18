"""The probes' client retry policy: its decisions against the OpenAI Python SDK itself (the dev
dependency, the rule's source), and the real simulator's 429s and 503s that it absorbs."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import openai
import openai._base_client as sdk
import pytest
from openai._models import FinalRequestOptions
from prometheus_client import CollectorRegistry

from monitor.model import Model, RetryPolicy, load_model
from monitor.probes.exchange import Exchange, chat_body
from monitor.probes.metrics import ProbeMetrics
from monitor.probes.result import ProbeResult
from monitor.probes.retry import backoff, reason, send_chat
from monitor.probes.runner import PlannedProbe, plan_round, run_probe
from monitor.probes.target import Target
from monitor.sim.harness import SimHandle
from tests.probes.conftest import write_config

pytestmark = pytest.mark.timeout(60)

SDK_CASES: list[tuple[int, dict[str, str]]] = [
    (code, {}) for code in (400, 401, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504)
] + [
    (503, {"x-should-retry": "false"}),
    (400, {"x-should-retry": "true"}),
    (429, {"retry-after": "121"}),  # beyond the SDK's two minutes: no retry
    (429, {"retry-after": "120"}),
    (429, {"retry-after-ms": "250"}),
    (500, {"retry-after-ms": "500000"}),
]


def _sdk() -> openai.OpenAI:
    return openai.OpenAI(api_key="unused", base_url="http://127.0.0.1:9", max_retries=10)


def _answer(code: int, headers: dict[str, str]) -> Exchange:
    return Exchange(0.0, 0.0, 0.0, status=code, failure="http_status", retry_headers=headers)


@pytest.mark.parametrize(("code", "headers"), SDK_CASES)
def test_which_answers_are_retried_is_the_sdks_rule(code: int, headers: dict[str, str]) -> None:
    response = httpx.Response(code, headers=headers, request=httpx.Request("POST", "http://x"))
    assert (reason(_answer(code, headers), RetryPolicy(2)) is not None) == _sdk()._should_retry(response)


@pytest.mark.parametrize("headers", [{}, {"retry-after-ms": "50"}, {"retry-after": "3"}, {"retry-after": "0"},
                                     {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}])  # fmt: skip
@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999])
def test_the_wait_is_the_sdks(monkeypatch: pytest.MonkeyPatch, headers: dict[str, str], draw: float) -> None:
    monkeypatch.setattr(sdk, "random", lambda: draw)
    client, options = _sdk(), FinalRequestOptions.construct(method="post", url="/x")
    for taken in range(6):
        expected = client._calculate_retry_timeout(10 - taken, options, httpx.Headers(headers))
        assert backoff(RetryPolicy(2), taken, headers, draw) == pytest.approx(expected, abs=1e-12)


def test_a_connection_error_is_retried_and_a_broken_stream_after_headers_is_not() -> None:
    policy = RetryPolicy(2)
    assert reason(Exchange(0.0, 0.0, 0.0, failure="connect_error"), policy) == "connection"
    assert reason(Exchange(0.0, 0.0, 0.0, failure="timeout"), policy) == "timeout"
    assert reason(Exchange(0.0, 0.0, 0.0, status=200, failure="stream_broken"), policy) is None
    assert reason(Exchange(0.0, 0.0, 0.0, status=400, failure="context_rejected"), policy) is None


def _model(tmp_path: Path, sim: SimHandle, retry: str | None) -> Model:
    path = write_config(tmp_path / "monitor.yaml", sim.base_url, kinds="[chat]")
    if retry is not None:
        path.write_text(path.read_text().replace("tool_delay: 10ms}", f"tool_delay: 10ms, retry: {retry}}}"))
    return load_model(path)


def _run(p: PlannedProbe) -> ProbeResult:
    async def go() -> ProbeResult:
        async with httpx.AsyncClient() as client:
            return await run_probe(p, client)

    return asyncio.run(go())


def _send(target: Target, **kw: Any) -> tuple[Exchange, list[float]]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # records the wait instead of taking it
        waits.append(seconds)

    async def go() -> Exchange:
        body = chat_body(target, [{"role": "user", "content": "Return the word ready."}], max_tokens=8)
        async with httpx.AsyncClient() as client:
            return await send_chat(client, target, body, 20.0, sleep=sleep, **kw)

    return asyncio.run(go()), waits


def test_retries_absorb_429s_and_the_wait_counts_from_the_first_attempt(
    tmp_path: Path, healthy_sim: SimHandle
) -> None:
    model = _model(tmp_path, healthy_sim, "{max_retries: 2}")
    healthy_sim.set_faults(error_next=2, error_status=429, retry_after_ms=50)
    result = _run(plan_round(model)[0])
    assert result.ok, (result.reason, result.detail)
    t = result.timings
    assert t.retries == ("http_429", "http_429")
    assert t.retry_seconds >= 0.1  # two waits of the server's 50 ms, at least
    (served,) = healthy_sim.truth()["requests"][-1:]  # only the third attempt reached the engine
    server_e2e = served["finish"]["mono"] - served["arrival"]["mono"]
    assert (
        t.e2e is not None and t.ttft is not None and t.e2e >= 0.1 + server_e2e and t.ttft >= t.retry_seconds
    )
    registry = CollectorRegistry()
    metrics = ProbeMetrics.for_model(registry, model)
    metrics.observe(result)
    labels = {"class": "small", "reason": "http_429"}
    assert registry.get_sample_value("m3mon_probe_retries_total", labels) == 2.0
    assert registry.get_sample_value("m3mon_probe_retries_total", {**labels, "reason": "http_5xx"}) == 0.0
    stage = registry.get_sample_value("m3mon_probe_stage_seconds_total", {"class": "small", "stage": "retry"})
    assert stage == pytest.approx(t.retry_seconds)


def test_without_retries_the_same_fault_is_a_failure(tmp_path: Path, healthy_sim: SimHandle) -> None:
    model = _model(tmp_path, healthy_sim, None)
    assert not model.request_class("small").probe.retry.enabled  # the default: today's behaviour
    healthy_sim.set_faults(error_next=1, error_status=429, retry_after_ms=50)
    failed = _run(plan_round(model)[0])
    assert (failed.reason, failed.status_code, failed.timings.retries) == ("http_status", 429, ())
    assert _run(plan_round(model)[0]).ok  # the one injected error was used up by that attempt


def test_503s_back_off_as_the_sdk_and_give_up_after_max_retries(
    tmp_path: Path, healthy_sim: SimHandle
) -> None:
    target = plan_round(_model(tmp_path, healthy_sim, "{max_retries: 2}"))[0].target
    healthy_sim.set_faults(error_next=1, error_status=503)
    ex, waits = _send(target, draw=lambda: 0.0)
    assert (ex.failure, ex.retries, waits) == (None, ("http_5xx",), [0.5])  # INITIAL_RETRY_DELAY
    healthy_sim.set_faults(error_next=5, error_status=503, retry_after_ms=20)
    ex, waits = _send(target)
    assert (ex.status, ex.failure, ex.retries, waits) == (
        503,
        "http_status",
        ("http_5xx", "http_5xx"),
        [0.02] * 2,
    )


def test_a_wait_beyond_the_timeout_is_not_taken(tmp_path: Path, healthy_sim: SimHandle) -> None:
    target = plan_round(_model(tmp_path, healthy_sim, "{max_retries: 2}"))[0].target
    healthy_sim.set_faults(error_next=1, error_status=429, retry_after_ms=30_000)  # the class timeout is 20 s
    ex, waits = _send(target)
    assert (ex.status, ex.retries, waits) == (429, (), [])


def test_connection_errors_are_retried(tmp_path: Path, healthy_sim: SimHandle) -> None:
    target = plan_round(_model(tmp_path, healthy_sim, "{max_retries: 2}"))[0].target
    closed = replace(target, endpoint=replace(target.endpoint, base_url="http://127.0.0.1:9"))
    ex, waits = _send(closed, draw=lambda: 0.0)
    assert (ex.failure, ex.retries, waits) == ("connect_error", ("connection", "connection"), [0.5, 1.0])
