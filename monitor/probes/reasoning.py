"""The reasoning probe: one question per ``thinking_mode`` (enabled, adaptive, disabled).

Each mode is sent as ``chat_template_kwargs: {"thinking_mode": mode}``. Reasoning
(``delta.reasoning`` or the older ``delta.reasoning_content``) must be present with ``enabled``
and absent with ``disabled``; ``adaptive`` may do either (the model decides) and is recorded.
Reasoning in the wrong mode is ``wrong_answer`` (the server ignored the requested mode; a
missing reasoning parser shows up earlier as ``parser_leak``). The answer must be right in
every mode.

Verdict: the first failing mode in the order enabled, adaptive, disabled. Timings: the
``enabled`` run's, where the first reasoning token and the first answer token are timed apart.
``extra`` holds per mode ``<mode>_ttft``, ``<mode>_ttft_answer``, ``<mode>_first_reasoning``,
``<mode>_reasoning_tokens`` and ``<mode>_reasoning_present`` (0/1).
"""

from __future__ import annotations

import time

import httpx

from monitor.probes.base import make_result
from monitor.probes.exchange import SAMPLING, Exchange, chat_body
from monitor.probes.judge import Verdict, expect_word, judge_answer
from monitor.probes.result import ProbeResult
from monitor.probes.retry import send_chat
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.tracing import probe_span

MODES = ("enabled", "adaptive", "disabled")
PROMPT = "Think it over step by step, then return the word ready."
EXPECTED = "ready"


def judge_mode(ex: Exchange, mode: str, model: str) -> Verdict:
    """Shared checks, then reasoning presence as the mode requires, then the answer."""
    verdict = judge_answer(ex, model)
    if not verdict.ok:
        return verdict
    present = bool(ex.transcript.reasoning.strip())
    if mode == "enabled" and not present:
        return Verdict("wrong_answer", "thinking_mode enabled but no reasoning in the stream")
    if mode == "disabled" and present:
        return Verdict("wrong_answer", "thinking_mode disabled but the stream carried reasoning")
    return expect_word(ex.transcript.content, EXPECTED)


def mode_extra(mode: str, ex: Exchange) -> dict[str, float]:
    t = ex.timings()
    extra = {f"{mode}_reasoning_present": float(bool(ex.transcript.reasoning.strip()))}
    for name, value in (
        ("ttft", t.ttft),
        ("ttft_answer", t.ttft_answer),
        ("first_reasoning", t.first_reasoning),
    ):
        if value is not None:
            extra[f"{mode}_{name}"] = value
    tokens = ex.transcript.usage_int("completion_tokens_details", "reasoning_tokens")
    if tokens is not None:
        extra[f"{mode}_reasoning_tokens"] = float(tokens)
    return extra


async def probe(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    started_at = time.time()
    with probe_span(spec.kind, target.endpoint.name, target.request_class.name, target.model) as span:
        runs: dict[str, Exchange] = {}
        verdicts: list[Verdict] = []
        extra: dict[str, float] = {}
        for mode in MODES:
            params = {**SAMPLING, "max_tokens": spec.reasoning_max_tokens}
            messages = [{"role": "user", "content": PROMPT}]
            body = chat_body(target, messages, chat_template_kwargs={"thinking_mode": mode}, **params)
            ex = await send_chat(client, target, body, spec.plan.timeout)
            runs[mode] = ex
            verdicts.append(judge_mode(ex, mode, target.model))
            extra.update(mode_extra(mode, ex))
            if ex.failure is not None:
                break
        verdict = next((v for v in verdicts if not v.ok), Verdict())
        return make_result(target, spec, started_at, verdict, runs["enabled"], span, extra=extra,
                           also=tuple(runs.values()))  # fmt: skip
