"""The long-prompt probe: a needle in a prompt sized to the request class, cold then warm.

1. **Cold**: a prompt of at most ``ProbePlan.long_prompt_tokens`` tokens (counted by the server's
   own tokenizer, :mod:`monitor.probes.tokens`; the answer budget included) that starts with a
   unique salt (so no prefix cache can hold it), hides a needle sentence in the middle and asks for it.
2. **Warm**: the same prompt again. Its TTFT and ``usage.prompt_tokens_details.cached_tokens``
   show whether prefix caching works (``extra``: ``cold_ttft``, ``warm_ttft``,
   ``warm_cached_tokens``).
3. **Over the ceiling**: a prompt surely longer than 1.25 × the class's ``max_context_tokens`` must
   be refused (HTTP 400, ``context_rejected``) — that is the expected outcome. If the server accepts it the
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
from monitor.probes.exchange import NO_THINKING, SAMPLING, Exchange, chat_body
from monitor.probes.judge import Verdict, expect_word, judge_answer
from monitor.probes.result import ProbeResult
from monitor.probes.retry import send_chat
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.tokens import Calibration, calibrate, filler, server_tokens
from monitor.probes.tracing import probe_span

OVER_CEILING = 1.25
QUESTION = "What is the secret code mentioned in the notes above? Reply with the code."


@functools.lru_cache(maxsize=8)
def _filler_halves(sentences: int, seed: int) -> tuple[str, str]:
    """The filler before and after the needle; deterministic, so built once per size and seed."""
    drawn = filler(sentences, random.Random(seed))
    middle = len(drawn) // 2
    return " ".join(drawn[:middle]), " ".join(drawn[middle:])


def _head(salt: str) -> str:
    return f"Session {salt}. Read the notes below."


def _needle(needle: str) -> str:
    return f"The secret code is {needle}."


def build_prompt(sentences: int, needle: str, salt: str, seed: int = 0) -> str:
    """``sentences`` filler sentences: the salt first, the needle in the middle, the question last."""
    before, after = _filler_halves(sentences, seed)
    body = " ".join(part for part in (before, _needle(needle), after) if part)
    return "\n".join([_head(salt), body, QUESTION])


async def _fixed_tokens(
    client: httpx.AsyncClient, target: Target, cal: Calibration, needle: str, salt: str
) -> int:
    """Server tokens of the prompt's parts other than the filler (estimated when it cannot be asked)."""
    text = "\n".join([_head(salt), _needle(needle), QUESTION])
    counted = await server_tokens(client, target.endpoint, text) if cal.source == "tokenize" else None
    return counted if counted is not None else len(text) // 2


async def _ask(
    target: Target, spec: ProbeSpec, client: httpx.AsyncClient, prompt: str, max_tokens: int
) -> Exchange:
    messages = [{"role": "user", "content": prompt}]
    body = chat_body(target, messages, max_tokens=max_tokens, **SAMPLING, **NO_THINKING)
    return await send_chat(client, target, body, spec.plan.timeout)


def judge_ceiling(ex: Exchange) -> Verdict:
    """Success when the over-ceiling prompt was refused as too long."""
    if ex.failure == "context_rejected":
        return Verdict()
    if ex.failure is not None:
        return Verdict(ex.failure, f"over-ceiling prompt: {ex.detail}")
    return Verdict("wrong_answer", "a prompt over the class ceiling was accepted (HTTP 200)")


async def probe(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    started_at = time.time()
    needle, salt = f"{random.randrange(10000, 100000)}", uuid.uuid4().hex
    cal = await calibrate(client, target.endpoint)
    fixed = await _fixed_tokens(client, target, cal, needle, salt)
    prompt = build_prompt(cal.sentences(spec.plan.long_prompt_tokens - spec.max_tokens, fixed), needle, salt)
    with probe_span(spec.kind, target.endpoint.name, target.request_class.name, target.model) as span:
        cold = await _ask(target, spec, client, prompt, spec.max_tokens)
        verdicts = [judge_answer(cold, target.model)]
        verdicts[0] = verdicts[0] if not verdicts[0].ok else expect_word(cold.transcript.content, needle)
        extra: dict[str, float] = {}
        asked: list[Exchange] = []
        if cold.failure is None:
            warm = await _ask(target, spec, client, prompt, spec.max_tokens)
            verdict = judge_answer(warm, target.model)
            verdicts.append(verdict if not verdict.ok else expect_word(warm.transcript.content, needle))
            extra.update(_cache_extra(cold, warm))
            over_sentences = cal.over(int(target.max_context_tokens * OVER_CEILING), fixed)
            over = await _ask(target, spec, client, build_prompt(over_sentences, needle, salt + "x"), 1)
            verdicts.append(judge_ceiling(over))
            extra["over_ceiling_rejected"] = float(over.failure == "context_rejected")
            asked += [warm, over]
        verdict = next((v for v in verdicts if not v.ok), Verdict())
        return make_result(target, spec, started_at, verdict, cold, span, extra=extra, also=asked)


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
