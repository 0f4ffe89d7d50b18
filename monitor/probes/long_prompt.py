"""The long-prompt probe: a needle in a prompt sized to the request class, cold then warm.

1. **Cold**: a prompt of about ``ProbePlan.long_prompt_tokens`` tokens that starts with a unique
   salt (so no prefix cache can hold it), hides a needle sentence in the middle and asks for it.
2. **Warm**: the same prompt again. Its TTFT and ``usage.prompt_tokens_details.cached_tokens``
   show whether prefix caching works (``extra``: ``cold_ttft``, ``warm_ttft``,
   ``warm_cached_tokens``).
3. **Over the ceiling**: a prompt of 1.25 × the class's ``max_context_tokens`` must be refused
   (HTTP 400, ``context_rejected``) — that is the expected outcome. If the server accepts it the
   pool admits prompts its class says it cannot serve, and the probe fails with ``wrong_answer``
   (the server answered a request it should have refused: a correctness failure).

The verdict is the first failure of cold, warm, ceiling; the timings are the cold run's.
"""

from __future__ import annotations

import functools
import random
import time
import uuid

import httpx

from monitor.probes.base import make_result
from monitor.probes.exchange import Exchange, chat_body, stream_chat
from monitor.probes.judge import Verdict, expect_word, judge_answer
from monitor.probes.result import ProbeResult
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.tracing import probe_span

#: Short common words: one token each in BPE vocabularies (and in any 1-4 character tokenizer),
#: so 12 words + "." make about 13 tokens a sentence whatever the server's tokenizer.
_WORD_TEXT = (
    "the old man saw a red fox run by his big blue boat on the calm lake near town each day and "
    "the sun was warm over the hill as we sat with tea and kids play in the park"
)
WORDS = tuple(_WORD_TEXT.split())
SENTENCE_WORDS = 12
TOKENS_PER_SENTENCE = SENTENCE_WORDS + 1
OVER_CEILING = 1.25
QUESTION = "What is the secret code mentioned in the notes above? Reply with the code."


def filler(tokens: int, rng: random.Random) -> list[str]:
    """Sentences of common words adding up to about ``tokens`` tokens."""
    count = max(1, tokens // TOKENS_PER_SENTENCE)
    return [
        " ".join(rng.choice(WORDS) for _ in range(SENTENCE_WORDS)).capitalize() + "." for _ in range(count)
    ]


@functools.lru_cache(maxsize=8)
def _filler_halves(tokens: int, seed: int) -> tuple[str, str]:
    """The filler before and after the needle; deterministic, so built once per size and seed."""
    sentences = filler(max(tokens - 40, TOKENS_PER_SENTENCE), random.Random(seed))
    middle = len(sentences) // 2
    return " ".join(sentences[:middle]), " ".join(sentences[middle:])


def build_prompt(tokens: int, needle: str, salt: str, seed: int = 0) -> str:
    """About ``tokens`` tokens: the salt first, the needle in the middle, the question last."""
    head = f"Session {salt}. Read the notes below."
    before, after = _filler_halves(tokens, seed)
    body = " ".join(part for part in (before, f"The secret code is {needle}.", after) if part)
    return "\n".join([head, body, QUESTION])


async def _ask(
    target: Target, spec: ProbeSpec, client: httpx.AsyncClient, prompt: str, max_tokens: int
) -> Exchange:
    messages = [{"role": "user", "content": prompt}]
    params = {"temperature": 1.0, "top_p": 0.95, "chat_template_kwargs": {"thinking_mode": "disabled"}}
    body = chat_body(target, messages, max_tokens=max_tokens, **params)
    return await stream_chat(client, target, body, spec.plan.timeout)


def judge_ceiling(ex: Exchange) -> Verdict:
    """Success when the over-ceiling prompt was refused as too long."""
    if ex.failure == "context_rejected":
        return Verdict()
    if ex.failure is not None:
        return Verdict(ex.failure, f"over-ceiling prompt: {ex.detail}")
    return Verdict("wrong_answer", "a prompt over the class ceiling was accepted (HTTP 200)")


async def probe(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    started_at = time.time()
    needle = f"{random.randrange(10000, 100000)}"
    prompt = build_prompt(spec.plan.long_prompt_tokens, needle, uuid.uuid4().hex)
    with probe_span(spec.kind, target.endpoint.name, target.request_class.name, target.model) as span:
        cold = await _ask(target, spec, client, prompt, spec.max_tokens)
        verdicts = [judge_answer(cold, target.model)]
        verdicts[0] = verdicts[0] if not verdicts[0].ok else expect_word(cold.transcript.content, needle)
        extra: dict[str, float] = {}
        if cold.failure is None:
            warm = await _ask(target, spec, client, prompt, spec.max_tokens)
            verdict = judge_answer(warm, target.model)
            verdicts.append(verdict if not verdict.ok else expect_word(warm.transcript.content, needle))
            extra.update(_cache_extra(cold, warm))
            over_tokens = int(target.max_context_tokens * OVER_CEILING)
            over = await _ask(target, spec, client, build_prompt(over_tokens, needle, uuid.uuid4().hex), 1)
            verdicts.append(judge_ceiling(over))
            extra["over_ceiling_rejected"] = float(over.failure == "context_rejected")
        verdict = next((v for v in verdicts if not v.ok), Verdict())
        return make_result(target, spec, started_at, verdict, cold, span, extra=extra)


def _cache_extra(cold: Exchange, warm: Exchange) -> dict[str, float]:
    extra: dict[str, float] = {}
    for name, ex in (("cold", cold), ("warm", warm)):
        ttft = ex.timings().ttft
        if ttft is not None:
            extra[f"{name}_ttft"] = ttft
        cached = ex.transcript.usage_int("prompt_tokens_details", "cached_tokens")
        if cached is not None:
            extra[f"{name}_cached_tokens"] = float(cached)
    prompt_tokens = cold.transcript.usage_int("prompt_tokens")
    if prompt_tokens is not None:
        extra["prompt_tokens"] = float(prompt_tokens)
    return extra
