"""Replay prompts of an exact size: each one measured with the server's tokenizer and chat template.

A prompt built from the calibration alone (whole filler sentences, a margin below the budget,
:meth:`monitor.replay.requests.Sender.prepare`) is sure to fit but short: for a 256-token profile
real vLLM counted 213.8-214.9 prompt tokens per request (16.5 % short), which made short-prompt
capacities optimistic. When the endpoint answers ``POST /tokenize`` with ``messages`` (vLLM does;
the chat template, the tools and the generation prompt included), :func:`fit` sizes each prompt
to within :data:`TOLERANCE` of its planned length: the filler is a list of words, and the word
count is corrected from the measured count (at most :data:`ROUNDS` measurements a prompt, the
closest one kept). Images are not measured (their tokens depend on the server's processor): an
image request keeps the calibrated size. Where the endpoint cannot measure, every prompt keeps
the calibrated size and the run says so (:data:`UNMEASURED`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx

from monitor.model import Endpoint
from monitor.probes.tokens import SENTENCE_WORDS, Calibration, count_of, filler, post

#: A measured prompt is within this share of its planned length (or one token of it); a run whose
#: served prompts are on average further off is no evidence (:func:`monitor.contract.runs.evidence_problem`).
TOLERANCE: Final = 0.02
#: Measurements of one prompt at most.
ROUNDS: Final = 5
#: How a run's prompts were sized: measured, or (the endpoint could not) estimated.
MEASURED: Final = "measured with the server's tokenizer and chat template"
UNMEASURED: Final = "estimated from the calibration (the endpoint's /tokenize does not take messages)"

Messages = list[dict[str, Any]]


async def chat_tokens(
    client: httpx.AsyncClient, endpoint: Endpoint, messages: Messages, tools: list[dict[str, Any]] | None
) -> int | None:
    """Prompt tokens the server makes of ``messages`` (template and tools included); None when
    ``/tokenize`` does not answer that."""
    body: dict[str, Any] = {"model": endpoint.model, "messages": messages, "add_generation_prompt": True}
    if tools:
        body["tools"] = tools
    return count_of(await post(client, endpoint, "/tokenize", body))


@dataclass
class Words:
    """Filler words drawn on demand from one generator, so a prompt can grow or shrink by words."""

    rng: random.Random
    words: list[str]

    def first(self, n: int) -> str:
        while len(self.words) < n:
            self.words += " ".join(filler(8, self.rng)).split(" ")
        return " ".join(self.words[:n])


def words_for(sentences: int) -> int:
    """The word count of ``sentences`` filler sentences."""
    return max(1, sentences * SENTENCE_WORDS)


def per_word(calibration: Calibration) -> float:
    """Server tokens one filler word costs, from the calibration (a period per sentence aside)."""
    return max(0.5, calibration.per_sentence / SENTENCE_WORDS)


async def fit(
    client: httpx.AsyncClient,
    endpoint: Endpoint,
    build: Callable[[int], Messages],
    tools: list[dict[str, Any]] | None,
    start: int,
    target: int,
    cost: float,
) -> tuple[Messages, int | None]:
    """Messages of ``build(n)`` filler words whose measured size is closest to ``target`` (within
    :data:`TOLERANCE` when the words allow), and that size; ``start`` words first, ``cost`` server
    tokens a word. ``(build(start), None)`` when the server cannot measure."""
    n, tried, best = start, set[int](), None
    for _ in range(ROUNDS):
        messages = build(n)
        count = await chat_tokens(client, endpoint, messages, tools)
        if count is None:
            return (messages, None) if best is None else best
        tried.add(n)
        if best is None or abs(count - target) < abs((best[1] or 0) - target):
            best = (messages, count)
        if abs(count - target) <= max(1.0, TOLERANCE * target):
            break
        step = round((target - count) / cost) or (1 if count < target else -1)
        n = max(0, n + step)
        while n in tried and n > 0:  # oscillating around the target: one word at a time
            n += 1 if count < target else -1
        if n in tried:
            break
    assert best is not None
    return best
