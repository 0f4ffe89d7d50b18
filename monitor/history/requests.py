"""One request served by a pool in accelerated time: queue, prefill, token steps, as the engine does.

:func:`serve` draws what the simulated engine would do with one request in the pool's state at that
moment (:class:`monitor.history.pool.PoolState`): a wait in the queue, the prefill of the uncached
prompt in chunks, the first token at the end of the prefill, then decode steps of
``1 + accepted drafts`` tokens each (:func:`monitor.sim.engine.accepted_drafts`), each step
lasting the pool's decode step with the engine's ``±jitter``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from monitor.history.pool import PoolState
from monitor.sim.engine import accepted_drafts


@dataclass(frozen=True)
class Ask:
    """One request of a probe: prompt and output sizes (tokens)."""

    prompt: int
    output: int
    reasoning: int = 0
    cached: int = 0  # prompt tokens served from the prefix cache


@dataclass(frozen=True)
class Served:
    """What the engine did with one request (seconds from its arrival)."""

    ask: Ask
    queue: float
    prefill: float
    steps: tuple[tuple[float, int], ...]  # decode steps after the first token: (seconds, tokens)
    decode: float  # the steps' seconds
    tokens: int  # completion tokens (the first plus the steps')
    tokenize: float = 0.0  # the API server's preprocessing, arrival -> queued (SimConfig's rule)

    @property
    def ttft(self) -> float:
        """Arrival to the first token (the server's view)."""
        return self.tokenize + self.queue + self.prefill

    @property
    def e2e(self) -> float:
        return self.tokenize + self.queue + self.prefill + self.decode

    def token_time(self, index: int) -> float:
        """Seconds from arrival until token ``index`` (1-based) was produced."""
        t, produced = self.ttft, 1
        for seconds, k in self.steps:
            if produced >= index:
                break
            t += seconds
            produced += k
        return t

    def itl_samples(self) -> tuple[float, ...]:
        """Per-token gaps as the probe reads them: a step of ``k`` tokens gives ``k`` samples of
        its length over ``k``."""
        return tuple(s / k for s, k in self.steps for _ in range(k))


def serve(st: PoolState, ask: Ask, rng: random.Random) -> Served:
    """Draw how the pool in state ``st`` serves ``ask``."""
    queue = rng.expovariate(1.0 / st.wait_mean) if rng.random() < st.wait_share else 0.0
    prefill = st.prefill(ask.prompt, rng.random(), ask.cached)
    base, jitter, cfg = st.decode_step(), st.config.jitter, st.config
    total, produced, decode = ask.reasoning + ask.output, 1, 0.0
    steps: list[tuple[float, int]] = []
    while produced < total:
        k = min(1 + accepted_drafts(cfg, rng), total - produced)
        seconds = base * (1 + jitter * (2 * rng.random() - 1))
        steps.append((seconds, k))
        produced += k
        decode += seconds
    tokenize = cfg.preprocess_overhead + ask.prompt / cfg.tokenize_tps  # as the simulator's serving
    return Served(ask, queue, prefill, tuple(steps), decode, produced, tokenize)
