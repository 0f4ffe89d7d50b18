"""A forced-length request (``ignore_eos`` with ``max_tokens``, as ``vllm bench serve`` and
``m3mon replay`` send) always ends with ``finish_reason: length``, as real vLLM 0.32 said for all
~550 such requests (issue 26, finding 4: the simulator said ``stop`` for 1-4 of ~60 per run, where
the padded answer happened to end on the max_tokens-th token). Without ``ignore_eos`` an answer
that ends by itself is ``stop``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from monitor.sim.harness import SimHandle
from tests.sim.conftest import HTTP, ask

pytestmark = pytest.mark.timeout(60)
PROMPTS = [f"Tell me about item {i} of the catalogue, please." for i in range(80)]


def _finish(sim: SimHandle, body: dict[str, object]) -> tuple[str, int]:
    r = HTTP.post(f"{sim.base_url}/v1/chat/completions", json=body)
    r.raise_for_status()
    doc = r.json()
    return doc["choices"][0]["finish_reason"], doc["usage"]["completion_tokens"]


@pytest.mark.parametrize("max_tokens", [16, 128])
def test_forced_lengths_end_with_length(sim: SimHandle, max_tokens: int) -> None:
    bodies = [ask(p, max_tokens=max_tokens, ignore_eos=True) for p in PROMPTS]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda b: _finish(sim, b), bodies))
    assert {reason for reason, _ in results} == {"length"}
    assert {tokens for _, tokens in results} == {max_tokens}


def test_an_answer_that_ends_by_itself_is_stop(sim: SimHandle) -> None:
    assert _finish(sim, ask("Return the word ready.", max_tokens=64)) == ("stop", 2)
