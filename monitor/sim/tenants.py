"""Real traffic of many tenants for the simulator: a skewed mix and a client that sends it.

:class:`TenantMix` draws requests the way a multi-tenant service sees them: a few heavy tenants
with most of the requests, a long tail of small ones (Zipf-distributed), and one tenant whose
requests are long and slow (long prompts, long answers: it misses the latency limits the others
meet). Each request names its tenant in the OpenAI ``user`` field and carries a vLLM ``priority``;
a simulator started with ``tenant_span_attributes`` puts both on its span
(:data:`monitor.sim.tracing.TENANT_ATTRIBUTES`), as a gateway in front of vLLM would.

:func:`send` posts them with a fresh W3C ``traceparent`` each, so the caller knows every request's
trace id, tenant and priority (an oracle for what the monitor should count).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

import httpx

from monitor.conventions import M3_MODEL_ID

#: Prompt words of every request but the slow tenant's.
NORMAL_PROMPT_WORDS = 20


@dataclass(frozen=True)
class TenantRequest:
    """One request of the mix: who sends it, at which priority, and the chat body."""

    tenant: str
    priority: int
    body: dict[str, Any]


@dataclass(frozen=True)
class Sent:
    """A request as sent: its trace id, tenant, priority and the HTTP status it got."""

    trace_id: str
    tenant: str
    priority: int
    status: int


@dataclass(frozen=True)
class TenantMix:
    """The skewed tenant mix (module docstring); every draw comes from ``seed``."""

    heavy: tuple[str, ...] = ("acme", "globex", "initech")
    heavy_share: float = 0.6
    tail: int = 50  # tail tenants ``tail-0001`` ...
    slow: str = "slowco"
    slow_share: float = 0.1
    slow_prompt_words: int = 2000
    slow_tokens: int = 200  # output tokens of each slow request (ignore_eos: exactly this many)
    slow_long_share: float = 1.0  # share of the slow tenant's requests that are long; the rest as others'
    tokens: int = 16  # output tokens of every other request
    high_priority_share: float = 0.2  # requests sent with priority -1 (vLLM: lower is served first)
    seed: int = 0

    def tenants(self) -> tuple[str, ...]:
        return (*self.heavy, self.slow, *(f"tail-{i:04d}" for i in range(1, self.tail + 1)))

    def weights(self) -> tuple[float, ...]:
        """Each tenant's share of the requests, in :meth:`tenants` order."""
        zipf = [1.0 / (i**1.1) for i in range(1, self.tail + 1)]
        rest = max(0.0, 1.0 - self.heavy_share - self.slow_share)
        heavy = [self.heavy_share / len(self.heavy)] * len(self.heavy)
        return (*heavy, self.slow_share, *(rest * z / sum(zipf) for z in zipf))

    def is_long(self, tenant: str, rng: random.Random) -> bool:
        """Whether a request of ``tenant`` is one of the slow tenant's long ones (with every slow
        request long, no draw is made: the mix's sequence of requests stays the same)."""
        if tenant != self.slow:
            return False
        return self.slow_long_share >= 1.0 or rng.random() < self.slow_long_share

    def prompt_words(self, long: bool) -> int:
        return self.slow_prompt_words if long else NORMAL_PROMPT_WORDS

    def output_tokens(self, long: bool) -> int:
        return self.slow_tokens if long else self.tokens

    def draw(self, rng: random.Random, k: int) -> list[tuple[str, int]]:
        """``k`` (tenant, priority) pairs in the mix's shares, for a caller that sizes the requests
        itself (:meth:`is_long`, :meth:`prompt_words`, :meth:`output_tokens`), as the demo's
        generated history does."""
        names = rng.choices(self.tenants(), weights=self.weights(), k=k)
        return [(t, -1 if rng.random() < self.high_priority_share else 0) for t in names]

    def requests(self, n: int, model: str = M3_MODEL_ID) -> list[TenantRequest]:
        rng = random.Random(self.seed)
        names = rng.choices(self.tenants(), weights=self.weights(), k=n)
        return [self._request(rng, tenant, model) for tenant in names]

    def _request(self, rng: random.Random, tenant: str, model: str) -> TenantRequest:
        priority = -1 if rng.random() < self.high_priority_share else 0
        long = self.is_long(tenant, rng)
        prompt = " ".join(f"w{rng.randrange(10_000)}" for _ in range(self.prompt_words(long)))
        body = {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.output_tokens(long),
            "ignore_eos": True,
            "user": tenant,
            "priority": priority,
        }
        return TenantRequest(tenant, priority, body)


async def send(
    base_url: str, requests: list[TenantRequest], concurrency: int = 8, seed: int = 0, timeout: float = 60.0
) -> list[Sent]:
    """Post every request to ``base_url``'s chat completions, ``concurrency`` at a time."""
    rng = random.Random(seed)
    ids = [f"{rng.getrandbits(128) | 1:032x}" for _ in requests]
    gate = asyncio.Semaphore(concurrency)

    async def one(client: httpx.AsyncClient, r: TenantRequest, trace_id: str) -> Sent:
        headers = {"traceparent": f"00-{trace_id}-{rng.getrandbits(64) | 1:016x}-01"}
        async with gate:
            resp = await client.post(f"{base_url}/v1/chat/completions", json=r.body, headers=headers)
        return Sent(trace_id, r.tenant, r.priority, resp.status_code)

    async with httpx.AsyncClient(timeout=timeout) as client:
        return list(await asyncio.gather(*(one(client, r, t) for r, t in zip(requests, ids, strict=True))))
