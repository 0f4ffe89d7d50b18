"""The chat probe: "Return the word ready." — the cheapest end-to-end check of an endpoint.

Checks: HTTP 200, a complete stream, the endpoint's model id, a finish reason, usage present,
and an answer containing "ready". Thinking is switched off so a reasoning model answers within
the 16-token budget.
"""

from __future__ import annotations

import httpx

from monitor.probes.base import single_request
from monitor.probes.exchange import NO_THINKING, SAMPLING, Exchange
from monitor.probes.judge import Verdict, expect_word, judge_answer
from monitor.probes.result import ProbeResult
from monitor.probes.target import ProbeSpec, Target

PROMPT = "Return the word ready."
EXPECTED = "ready"


async def probe(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    params = {**SAMPLING, **NO_THINKING, "max_tokens": spec.max_tokens}

    def check(ex: Exchange) -> Verdict:
        verdict = judge_answer(ex, target.model)
        return verdict if not verdict.ok else expect_word(ex.transcript.content, EXPECTED)

    return await single_request(target, spec, client, [{"role": "user", "content": PROMPT}], params, check)
