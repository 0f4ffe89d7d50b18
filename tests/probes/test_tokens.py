"""Prompts sized by the server's tokenizer (monitor.probes.tokens) against the simulator.

The simulator's ``/tokenize`` answers like vLLM's; the check is what the engine then charges
(``usage.prompt_tokens`` of a real request) against the budget asked for. The calibration paths
(SGLang's answer, the usage fallback after a 404, the cache per deployment fingerprint, the
uncached estimate) run against a small real HTTP server on 127.0.0.1 whose tokenizer is simple
enough to compute every expectation by hand.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor.model import Endpoint, load_model
from monitor.probes import tokens
from monitor.sim.harness import SimHandle
from tests.probes.conftest import write_config
from tests.support import localhttp

MODEL = "MiniMaxAI/MiniMax-M3"


def _endpoint(sim: SimHandle, tmp_path: Path) -> Endpoint:
    return load_model(write_config(tmp_path / "m.yaml", sim.base_url)).endpoints[0]


def _charged(sim: SimHandle, text: str) -> int:
    body = {"model": "MiniMaxAI/MiniMax-M3", "max_tokens": 1, "messages": [{"role": "user", "content": text}]}
    doc = localhttp.post(f"{sim.base_url}/v1/chat/completions", json=body, timeout=30).json()
    return int(doc["usage"]["prompt_tokens"])


@pytest.mark.parametrize("budget", [300, 3000])
def test_prompt_of_tokens_fits_the_budget_the_engine_charges(
    sim: SimHandle, tmp_path: Path, budget: int
) -> None:
    endpoint = _endpoint(sim, tmp_path)

    async def go() -> tuple[str, tokens.Calibration]:
        async with httpx.AsyncClient() as client:
            text = await tokens.prompt_of_tokens(client, endpoint, budget, seed=1, prefix="Session abc.")
            return text, await tokens.calibrate(client, endpoint)

    text, cal = asyncio.run(go())
    assert cal.source == "tokenize"
    assert text.startswith("Session abc. ")
    charged = _charged(sim, text)
    assert 0.85 * budget < charged <= budget


def test_usage_calibration_agrees_with_tokenize(sim: SimHandle, tmp_path: Path) -> None:
    """Where /tokenize is not served the two-request usage fallback measures the same cost."""
    endpoint = _endpoint(sim, tmp_path)

    async def go() -> tuple[tokens.Calibration | None, tokens.Calibration | None]:
        async with httpx.AsyncClient() as client:
            return await tokens.by_tokenize(client, endpoint), await tokens.by_usage(client, endpoint)

    by_tokenize, by_usage = asyncio.run(go())
    assert by_tokenize is not None and by_usage is not None and by_usage.source == "usage"
    assert by_usage.per_sentence == pytest.approx(by_tokenize.per_sentence, rel=0.02)
    assert abs(by_usage.overhead - by_tokenize.overhead) <= 4


def test_tokenize_rejects_a_body_without_prompt_or_messages(sim: SimHandle) -> None:
    bad = localhttp.post(f"{sim.base_url}/tokenize", json={"model": "MiniMaxAI/MiniMax-M3"}, timeout=5)
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "BadRequestError"
    unknown = localhttp.post(f"{sim.base_url}/tokenize", json={"model": "other", "prompt": "x"}, timeout=5)
    assert unknown.status_code == 404


# --- Calibration paths against a small real HTTP server answering like SGLang -----------------
#
# Its tokenizer is one token per whitespace-separated word (plus a BOS token when
# ``add_special_tokens`` is not false, SGLang's default); its chat usage charges the user message's
# words plus CHAT_OVERHEAD. The calibration sample is 64 sentences of 12 words: 768 tokens.

SAMPLE_WORDS = 64 * 12
CHAT_OVERHEAD = 7


@dataclass
class Stub:
    """What the server answers; ``hits`` counts requests per path."""

    tokenize: str = "sglang"  # "sglang" (tokens + count), "tokens-only", or "missing" (404)
    usage: bool = True  # False: chat completions answer 503
    version: str = "0.5.2"
    max_model_len: int = 4096
    hits: Counter[str] = field(default_factory=Counter)


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, doc: Any) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            stub.hits[self.path] += 1
            if self.path == "/version":
                return self._send(200, {"version": stub.version})
            cards = [{"id": MODEL, "object": "model", "max_model_len": stub.max_model_len}]
            return self._send(200, {"object": "list", "data": cards})

        def do_POST(self) -> None:
            stub.hits[self.path] += 1
            doc = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            if self.path == "/tokenize":
                return self._tokenize(doc)
            if not stub.usage:
                return self._send(503, {"error": {"message": "overloaded", "code": 503}})
            words = len(doc["messages"][-1]["content"].split()) + CHAT_OVERHEAD
            usage = {"prompt_tokens": words, "completion_tokens": 1, "total_tokens": words + 1}
            return self._send(200, {"model": MODEL, "choices": [], "usage": usage})

        def _tokenize(self, doc: dict[str, Any]) -> None:
            if stub.tokenize == "missing":
                return self._send(404, {"detail": "Not Found"})
            if not isinstance(doc.get("prompt"), str):  # SGLang's TokenizeRequest has no `messages`
                return self._send(400, {"error": {"message": "prompt: Field required", "code": 400}})
            ids = [i + 5 for i in range(len(doc["prompt"].split()))]
            ids = ids if doc.get("add_special_tokens") is False else [1, *ids]
            answer: dict[str, Any] = {"tokens": ids, "count": len(ids), "max_model_len": stub.max_model_len}
            if stub.tokenize == "tokens-only":
                del answer["count"]
            return self._send(200, answer)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving(stub: Stub) -> Iterator[Endpoint]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        yield Endpoint("stub", url, "sglang", MODEL, ("small",), 15.0)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no calibration (a later stub may reuse an earlier one's port)."""
    monkeypatch.setattr(tokens, "_CACHE", {})


def _calibrate(endpoint: Endpoint) -> tokens.Calibration:
    async def go() -> tokens.Calibration:
        async with httpx.AsyncClient() as client:
            return await tokens.calibrate(client, endpoint)

    return asyncio.run(go())


@pytest.mark.parametrize("shape", ["sglang", "tokens-only"])
def test_sglang_tokenize_answer_sizes_prompts(shape: str) -> None:
    stub = Stub(tokenize=shape)
    with serving(stub) as endpoint:
        cal = _calibrate(endpoint)

        async def go() -> tuple[str, int | None]:
            async with httpx.AsyncClient() as client:
                text = await tokens.prompt_of_tokens(client, endpoint, 1000, seed=3, prefix="Session abc.")
                return text, await tokens.server_tokens(client, endpoint, text)

        text, counted = asyncio.run(go())
    # 768 words / 64 sentences (no BOS: add_special_tokens false); `messages` refused: the allowance
    assert (cal.source, cal.per_sentence, cal.overhead) == ("tokenize", 12.0, tokens.TEMPLATE_ALLOWANCE)
    # floor((1000 * 0.96 - 64 - 2 prefix tokens) / 12) = floor(74.5) = 74 sentences
    assert text.startswith("Session abc. ") and text.count(".") == 1 + 74
    assert counted == 2 + 74 * 12
    assert stub.hits["/tokenize"] == 2 + 1 + 1  # calibration (plain, messages), the prefix, the check


def test_calibration_is_kept_per_deployment_and_redone_after_a_version_change() -> None:
    stub = Stub()
    with serving(stub) as endpoint:
        first = _calibrate(endpoint)
        assert stub.hits["/tokenize"] == 2
        assert _calibrate(endpoint) is first and stub.hits["/tokenize"] == 2  # same fingerprint: cached
        stub.version = "0.5.3"
        again = _calibrate(endpoint)
        assert stub.hits["/tokenize"] == 4 and again == first and again is not first
        stub.max_model_len = 8192  # a new context length is a new deployment too
        _calibrate(endpoint)
        assert stub.hits["/tokenize"] == 6
        assert stub.hits["/version"] == 4 and stub.hits["/v1/models"] == 4


def test_a_404_tokenize_falls_back_to_usage_calibration() -> None:
    stub = Stub(tokenize="missing")
    with serving(stub) as endpoint:
        cal = _calibrate(endpoint)
        # "." costs 1 + 7 = 8 tokens; the sample 768 + 7 = 775: (775 - 8) / 64 per sentence
        assert (cal.source, cal.per_sentence, cal.overhead) == ("usage", 767 / 64, 8)
        assert stub.hits["/tokenize"] == 1 and stub.hits["/v1/chat/completions"] == 2
        assert _calibrate(endpoint) is cal and stub.hits["/v1/chat/completions"] == 2


def test_the_last_resort_estimate_is_not_cached() -> None:
    stub = Stub(tokenize="missing", usage=False)
    with serving(stub) as endpoint:
        assert _calibrate(endpoint) is tokens.ESTIMATE
        assert _calibrate(endpoint) is tokens.ESTIMATE
        assert stub.hits["/tokenize"] == 2 and stub.hits["/v1/chat/completions"] == 4  # asked again
        stub.usage = True  # the server answers now: measured, not the estimate
        assert _calibrate(endpoint).source == "usage"
        assert (tokens.ESTIMATE.per_sentence, tokens.ESTIMATE.overhead) == (13.0, 64)
