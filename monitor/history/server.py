"""Scrape intervals of a generated history: what the collector would have read from each pool.

For every interval ``(end − length, end]`` the pool's users finish a Poisson number of requests
at the pool's rate; each is drawn like :func:`monitor.history.requests.serve` draws a probe's request
(log-normal prompt, queue wait, chunked prefill shared with the other prompts, decode steps of the
mean tokens per step), all at once with numpy. Their times are binned on vLLM's default bucket edges
(:mod:`monitor.vllm_buckets`) into the canonical histograms of
:class:`monitor.scrape.signals.EngineSignals` — what the collector derives from two scrapes — with
the gauges at the interval's end (running, waiting, KV-cache use).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from monitor import vllm_buckets
from monitor.history.pool import Pool, PoolState, blocks, tokens_per_step
from monitor.scrape.signals import EngineSignals, Histogram, Signals
from monitor.sim.engine import step_seconds

Array = NDArray[np.float64]
EDGES = {
    "ttft": vllm_buckets.TIME_TO_FIRST_TOKEN,
    "itl": vllm_buckets.INTER_TOKEN_LATENCY,
    "tpot": vllm_buckets.INTER_TOKEN_LATENCY,
    **{k: vllm_buckets.REQUEST_LATENCY for k in ("e2e", "queue", "prefill", "decode", "inference")},
}
GENERATION = "vllm-v1-engine"


def _coefficients(st: PoolState) -> tuple[float, float, float]:
    """(seconds per full chunk, fixed and per-token seconds of the last chunk), shared prefill."""
    cfg, budget = st.config, st.config.max_num_batched_tokens
    batch = max(1, round(st.running))

    def g(tokens: int) -> float:
        return step_seconds(cfg, st.faults, batch, batch > 1, tokens, 0.5) / (1.0 - st.prefill_share)

    per_token = (g(budget) - g(1)) / (budget - 1)
    return g(budget), g(1) - per_token, per_token


class Requests:
    """The user requests finished in each interval of one pool, drawn at once."""

    def __init__(self, pool: Pool, states: list[PoolState], length: float, rng: np.random.Generator) -> None:
        traffic = pool.traffic
        rates = np.array([s.rate for s in states])
        self.n = rng.poisson(rates * length)
        self.idx = np.repeat(np.arange(len(states)), self.n)
        size = len(self.idx)
        cap = min(s.config.max_model_len for s in states) - 2 * traffic.output_mean
        prompt = np.clip(rng.lognormal(math.log(traffic.prompt_median), traffic.prompt_sigma, size), 16, cap)
        self.output = np.maximum(2, np.round(traffic.output_mean * rng.uniform(0.2, 1.8, size)))
        self.prompt = np.round(prompt)
        self._draw(states, rng)

    def _per_state(self, states: list[PoolState], fn: Callable[[PoolState], float]) -> Array:
        return np.array([fn(s) for s in states])[self.idx]

    def _draw(self, states: list[PoolState], rng: np.random.Generator) -> None:
        size = len(self.idx)
        coef = np.array([_coefficients(s) for s in states])[self.idx]
        budget = self._per_state(states, lambda s: s.config.max_num_batched_tokens)
        full, rest = np.divmod(self.prompt, budget)
        jitter = self._per_state(states, lambda s: s.config.jitter)
        spread = 1 + jitter * (2 * rng.random(size) - 1)
        self.prefill = (full * coef[:, 0] + (rest > 0) * (coef[:, 1] + coef[:, 2] * rest)) * spread
        waits = rng.random(size) < self._per_state(states, lambda s: s.wait_share)
        self.queue = waits * rng.exponential(self._per_state(states, lambda s: s.wait_mean))
        per_step = self._per_state(states, lambda s: tokens_per_step(s.config))
        self.steps = np.ceil((self.output - 1) / per_step)
        self.step = self._per_state(states, PoolState.decode_step) * (1 + jitter * (2 * rng.random(size) - 1))
        self.decode = self.steps * self.step
        self.ttft = self.queue + self.prefill
        self.e2e = self.ttft + self.decode

    def values(self, name: str) -> tuple[Array, Array]:
        """(observed values, observations each) of one histogram."""
        ones = np.ones(len(self.idx))
        if name == "itl":
            return self.step, self.steps
        if name == "tpot":
            return self.decode / np.maximum(1, self.output - 1), ones
        inference = self.prefill + self.decode
        table = {"ttft": self.ttft, "e2e": self.e2e, "queue": self.queue, "prefill": self.prefill,
                 "decode": self.decode, "inference": inference}  # fmt: skip
        return table[name], ones


def histograms(req: Requests, intervals: int) -> dict[str, list[Histogram]]:
    """Each canonical histogram of every interval (cumulative buckets, +Inf last)."""
    out: dict[str, list[Histogram]] = {}
    for name, edges in EDGES.items():
        values, weights = req.values(name)
        bounds = np.asarray(edges)
        nb = len(bounds) + 1
        bucket = np.searchsorted(bounds, values, side="left")  # value <= edge counts in that edge
        counts = np.bincount(req.idx * nb + bucket, weights, minlength=intervals * nb)
        cumulative = counts.reshape(intervals, nb).cumsum(axis=1)
        sums = np.bincount(req.idx, values * weights, minlength=intervals)
        full = (*edges, math.inf)
        rows, totals = cumulative.tolist(), sums.tolist()
        out[name] = [Histogram(full, tuple(r), total, r[-1]) for r, total in zip(rows, totals, strict=True)]
    return out


def intervals(
    pool: Pool, model_id: str, ends: list[float], length: float, state_at: Callable[[float], PoolState],
    rng: np.random.Generator,
) -> list[Signals]:  # fmt: skip
    """The collector's intervals of ``pool`` ending at ``ends`` (each ``length`` seconds long)."""
    states = [state_at(e - length / 2) for e in ends]
    req = Requests(pool, states, length, rng)
    hist = histograms(req, len(ends))
    tokens = np.bincount(req.idx, req.prompt, minlength=len(ends))
    generated = np.bincount(req.idx, req.output, minlength=len(ends))
    out = []
    for k, (end, st) in enumerate(zip(ends, states, strict=True)):
        held = blocks(st.config, pool.traffic.prompt_mean + pool.traffic.output_mean)
        kv = min(1.0, st.running * held / st.config.kv_blocks)
        eng = EngineSignals(
            finished={"stop": float(req.n[k])},
            histograms={name: h[k] for name, h in hist.items()},
            prompt_tokens=float(tokens[k]),
            generation_tokens=float(generated[k]),
            preemptions=0.0,
            running=float(round(st.running)),
            waiting=float(round(st.waiting)),
            kv_cache_usage=round(kv, 4),
        )
        signals = Signals(pool.name, "vllm", GENERATION, model_id, end, end - length, False, {"0": eng}, eng)
        out.append(signals)
    return out
