"""A pool's state at any instant, from the simulator's own latency model run in accelerated time.

The engine of :mod:`monitor.sim.engine` steps in real time; a week of it cannot be replayed step by
step in minutes. This module keeps its numbers and formulas and averages over time instead:

* one engine step lasts :func:`monitor.sim.engine.step_seconds` (``decode_itl`` scaled by the batch,
  plus prefill overhead and tokens over ``prefill_tps``, times the active faults), and a decode step
  yields ``1 +`` accepted draft tokens (:func:`monitor.sim.engine.accepted_drafts`);
* a request holds ``ceil((tokens + spec_tokens + 1) / block_size)`` KV blocks, as the engine
  allocates them, so at most :func:`slots` requests fit in ``kv_blocks`` (and ``max_num_seqs``);
* users arrive at ``peak_rate × load(t)`` (:func:`monitor.history.scenario.load`); the requests in
  the batch follow from Little's law, prompts share the prefill capacity (a prefill takes
  ``1 / (1 − share)`` longer when ``share`` of it is in use), and requests wait in the queue as in
  an M/M/c queue with as many servers as slots (Sakasegawa's approximation).

The averages are approximations of the step-by-step engine (documented in docs/history.md); the
probes, spans and scrape intervals built from them are what the monitor would have recorded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from monitor.history.scenario import (
    PREVIOUS_GPU_MEMORY,
    PREVIOUS_KV_BLOCKS,
    PREVIOUS_VLLM,
    Scenario,
    load,
)
from monitor.sim.config import VLLM_VERSION, SimConfig
from monitor.sim.engine import step_seconds
from monitor.sim.faults import Faults

#: Prefill may use at most this share of its capacity; beyond it the model would never drain.
MAX_PREFILL_SHARE = 0.9
#: Slot utilisation is capped here: the queue grows long but never without bound.
MAX_UTILISATION = 0.97


@dataclass(frozen=True)
class Traffic:
    """What users send a pool: requests per second at peak load and their sizes (tokens)."""

    peak_rate: float
    prompt_median: float
    prompt_sigma: float  # of the log-normal prompt size
    output_mean: float  # outputs are uniform in [0.2, 1.8] x this

    @property
    def prompt_mean(self) -> float:
        return self.prompt_median * math.exp(self.prompt_sigma**2 / 2)


#: Users of the example config's pools: chat on 32K, repository analysis on 128K, long documents.
TRAFFIC = {
    "m3-interactive": Traffic(5.0, 1500.0, 0.9, 250.0),
    "m3-repo": Traffic(0.15, 90000.0, 0.2, 3000.0),
    "m3-extended": Traffic(0.02, 220000.0, 0.3, 600.0),
}
DEFAULT_TRAFFIC = Traffic(1.0, 2000.0, 0.9, 250.0)


@dataclass(frozen=True)
class Pool:
    """One endpoint's simulated server over the history (its config changes at ``changed_at``)."""

    name: str
    config: SimConfig
    traffic: Traffic
    version: str = VLLM_VERSION
    before: SimConfig | None = None
    changed_at: float | None = None
    otlp: bool = True

    def config_at(self, t: float) -> SimConfig:
        if self.before is not None and self.changed_at is not None and t < self.changed_at:
            return self.before
        return self.config

    def version_at(self, t: float) -> str:
        if self.before is not None and self.changed_at is not None and t < self.changed_at:
            return PREVIOUS_VLLM
        return self.version


def make_pool(name: str, max_model_len: int, scn: Scenario, otlp: bool = True) -> Pool:
    """The pool as the demo's simulator runs it; the deployment pool ran smaller before its change."""
    cfg = SimConfig(max_model_len=max_model_len)
    traffic = TRAFFIC.get(name, DEFAULT_TRAFFIC)
    if name != scn.deployment_pool:
        return Pool(name, cfg, traffic, otlp=otlp)
    before = replace(cfg, kv_blocks=PREVIOUS_KV_BLOCKS, gpu_memory_utilization=PREVIOUS_GPU_MEMORY)
    return Pool(name, cfg, traffic, before=before, changed_at=scn.deployment_at, otlp=otlp)


@dataclass(frozen=True)
class PoolState:
    """A pool at one instant: its config and faults, load, batch, and how requests queue."""

    config: SimConfig
    faults: Faults
    rate: float  # user requests per second
    running: float  # requests in the batch
    slots: int
    prefill_share: float
    wait_share: float  # share of requests that wait in the queue
    wait_mean: float  # mean wait of those that wait (seconds)

    @property
    def waiting(self) -> float:
        """Requests in the queue (Little's law)."""
        return self.rate * self.wait_share * self.wait_mean

    def decode_step(self, draw: float = 0.5) -> float:
        return step_seconds(self.config, self.faults, max(1, round(self.running)), True, 0, draw)

    def prefill(self, prompt: int, draw: float = 0.5, cached: int = 0) -> float:
        """Seconds from scheduling to the first token for ``prompt`` tokens (``cached`` skipped)."""
        return prefill_seconds(self.config, self.faults, prompt - cached, self.running, draw) / (
            1.0 - self.prefill_share
        )


def tokens_per_step(cfg: SimConfig) -> float:
    """Mean tokens of one decode step: 1 plus the expected accepted draft tokens."""
    total, p = 1.0, 1.0
    for pos in range(cfg.spec_tokens):
        p *= cfg.spec_acceptance[min(pos, len(cfg.spec_acceptance) - 1)]
        total += p
    return total


def blocks(cfg: SimConfig, tokens: float) -> int:
    """KV blocks a request of ``tokens`` holds (prompt + output + lookahead), as the engine allocates."""
    return math.ceil((tokens + cfg.spec_tokens + 1) / cfg.block_size)


def slots(cfg: SimConfig, traffic: Traffic) -> int:
    """How many typical requests run at once: ``max_num_seqs`` or what the KV pool holds."""
    held = blocks(cfg, traffic.prompt_mean + traffic.output_mean)
    return max(1, min(cfg.max_num_seqs, cfg.kv_blocks // held))


def prefill_seconds(cfg: SimConfig, faults: Faults, prompt: int, running: float, draw: float = 0.5) -> float:
    """Engine time of a prompt's chunks (``max_num_batched_tokens`` each) alongside a decoding batch."""
    budget = cfg.max_num_batched_tokens
    full, rest = divmod(max(1, prompt), budget)
    batch = max(1, round(running))
    decoding = batch > 1
    t = full * step_seconds(cfg, faults, batch, decoding, budget, draw)
    return t + (step_seconds(cfg, faults, batch, decoding, rest, draw) if rest else 0.0)


def _service(cfg: SimConfig, faults: Faults, traffic: Traffic, running: float, share: float) -> float:
    prefill = prefill_seconds(cfg, faults, round(traffic.prompt_mean), running) / (1.0 - share)
    decode = traffic.output_mean / tokens_per_step(cfg)
    step = step_seconds(cfg, faults, max(1, round(running)), True, 0, 0.5)
    return prefill + decode * step


def state(pool: Pool, scn: Scenario, t: float) -> PoolState:
    """The pool at ``t``: load from the diurnal shape, faults from the scenario."""
    cfg, faults, traffic = pool.config_at(t), scn.faults(pool.name, t), pool.traffic
    rate = traffic.peak_rate * load(t)
    slow = faults.brownout_prefill_factor * faults.latency_multiplier
    share = min(MAX_PREFILL_SHARE, rate * traffic.prompt_mean * slow / cfg.prefill_tps)
    running = rate * _service(cfg, faults, traffic, 1.0, share)
    service = _service(cfg, faults, traffic, running, share)  # one fixed-point step for the batch size
    running = rate * service
    c = slots(cfg, traffic)
    rho = min(MAX_UTILISATION, running / c)
    wait_share = min(1.0, rho ** (math.sqrt(2 * (c + 1)) - 1)) if rho > 0 else 0.0
    wait_mean = service / (c * (1.0 - rho))
    return PoolState(cfg, faults, rate, min(running, float(c)), c, share, wait_share, wait_mean)
