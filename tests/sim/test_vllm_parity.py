"""Behaviours the real-vLLM conformance tier showed, kept in the simulator (docs/simulator.md,
"Compared with a real vLLM"): the finish reason of a named tool choice, ``/tokenize``'s count,
and the fingerprint ``m3mon scrape URL`` shows."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from monitor.probes.tool_call import TOOL_NAME, TOOLS
from monitor.sim.harness import SimHandle, running_simulator
from tests.support import localhttp

MODEL = "MiniMaxAI/MiniMax-M3"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimHandle]:
    with running_simulator(decode_itl=0.001, jitter=0.0, answer_tokens=(4, 6)) as handle:
        yield handle


def _chat(sim: SimHandle, **extra: Any) -> dict[str, Any]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Weather in Paris?"}], **extra}
    response = localhttp.post(f"{sim.base_url}/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return dict(response.json()["choices"][0])


@pytest.mark.parametrize(
    ("choice", "finish"),
    [("required", "tool_calls"), ("auto", "tool_calls"),
     ({"type": "function", "function": {"name": TOOL_NAME}}, "stop")],
)  # fmt: skip
def test_a_named_tool_choice_ends_with_stop_like_vllm(sim: SimHandle, choice: Any, finish: str) -> None:
    answer = _chat(sim, tools=TOOLS, tool_choice=choice, max_tokens=200)
    assert answer["message"]["tool_calls"][0]["function"]["name"] == TOOL_NAME
    assert answer["finish_reason"] == finish


def test_tokenize_counts_what_a_request_is_charged(sim: SimHandle) -> None:
    messages = [{"role": "user", "content": "Count the tokens of this sentence, please."}]
    counted = localhttp.post(
        f"{sim.base_url}/tokenize", json={"model": MODEL, "messages": messages}, timeout=5
    )
    charged = localhttp.post(f"{sim.base_url}/v1/chat/completions", timeout=30,
                         json={"model": MODEL, "messages": messages, "max_tokens": 1}).json()  # fmt: skip
    assert counted.json()["count"] == charged["usage"]["prompt_tokens"]
    assert counted.json()["max_model_len"] == 131072


def test_scrape_command_shows_the_servers_version_and_context(sim: SimHandle) -> None:
    """``m3mon scrape URL`` reads ``/version`` and ``/v1/models`` as the service does (it said ``version=?``)."""
    done = subprocess.run([sys.executable, "-m", "monitor", "scrape", f"{sim.base_url}/metrics", "--json"],
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    fp = json.loads(done.stdout)["fingerprint"]
    assert (fp["version"], fp["max_model_len"], fp["model"]) == ("0.33.0", 131072, MODEL)
