"""The simulated vLLM V1 engine: an asyncio step loop with a real scheduler.

Each step admits requests from a bounded FIFO waiting queue into at most ``max_num_seqs``
running slots (head-of-line blocking when the KV pool cannot hold the head), prefills in chunks
within a ``max_num_batched_tokens`` budget (time proportional to *uncached* tokens), decodes one
token plus speculative tokens per running request (acceptance drawn per position from one seeded
RNG), grows KV allocations and preempts the most recently scheduled request (recompute) when the
pool is exhausted. A step lasts ``decode_itl`` scaled by batch size plus the prefill time; all
requests in the step get their tokens at its end, as on a GPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from monitor.sim.config import SimConfig
from monitor.sim.faults import Faults
from monitor.sim.kvcache import KVPool
from monitor.sim.metrics import SimMetrics
from monitor.sim.request import SimRequest
from monitor.sim.residency import ResidencyTracker


class QueueFullError(Exception):
    """The waiting queue is at ``max_queue``; the request is rejected (HTTP 429)."""


#: Requests whose tokens are handed out per event-loop turn: between slices the loop lets the
#: streams of the previous slice write, so one step never blocks the loop for all requests at once.
EMIT_SLICE = 16
#: ``gpu_saturated``: every engine step takes this many times longer (the GPUs have no headroom).
GPU_SATURATED_SLOWDOWN = 2.0
#: ``engine_freeze``: how often a frozen engine looks whether the fault was cleared (seconds).
FROZEN_POLL = 0.05


def step_seconds(
    cfg: SimConfig, faults: Faults, running: int, decoding: bool, prefill_tokens: int, draw: float
) -> float:
    """How long one engine step takes (the latency model, also used by :mod:`monitor.history`).

    ``decode_itl`` scaled by the batch (``running`` requests) when the step decodes, plus the
    prefill overhead and ``prefill_tokens / prefill_tps`` when it prefills; times the faults'
    latency multiplier (prefill also by the brown-out factor) and a jitter of ``±cfg.jitter``
    from ``draw`` (uniform in [0, 1)).
    """
    t = 0.0
    if decoding:
        t += cfg.decode_itl * (1 + cfg.batch_slowdown * (running - 1) / max(1, cfg.max_num_seqs - 1))
    if prefill_tokens:
        t += cfg.prefill_overhead + prefill_tokens / cfg.prefill_tps * faults.brownout_prefill_factor
    jitter = 1 + cfg.jitter * (2 * draw - 1)
    return max(0.0, t * faults.latency_multiplier * jitter)


def accepted_drafts(cfg: SimConfig, rng: random.Random) -> int:
    """Draft tokens accepted in one decode step: position by position until one is rejected."""
    accepted, acceptance = 0, cfg.spec_acceptance
    for pos in range(cfg.spec_tokens):
        if rng.random() >= acceptance[min(pos, len(acceptance) - 1)]:
            break
        accepted += 1
    return accepted


@dataclass
class _Tally:
    """What one step produced, counted into the metrics once at the end of the step."""

    tokens: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    per_position: list[int] = field(default_factory=list)


@dataclass
class _Work:
    req: SimRequest
    prefill: int  # prompt tokens computed in this step
    decode: bool


class Engine:
    """Scheduler, KV pool and step loop of one simulated engine."""

    def __init__(
        self,
        config: SimConfig,
        faults: Callable[[], Faults],
        metrics: Callable[[], SimMetrics],
        on_finish: Callable[[SimRequest], None] | None = None,
    ) -> None:
        self._on_finish = on_finish
        self.config = config
        self._faults = faults
        self._metrics = metrics
        self.rng = random.Random(config.seed)
        tracker = None
        if config.kv_cache_metrics:
            tracker = ResidencyTracker(config.kv_cache_metrics_sample, config.seed + 2,
                                       lambda: self._metrics().residency)  # fmt: skip
        self.pool = KVPool(config.kv_blocks, tracker)
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self._wake = asyncio.Event()
        self.steps = 0

    # --- frontend side ---------------------------------------------------------------------

    def submit(self, req: SimRequest) -> None:
        """Queue ``req`` (raises :class:`QueueFullError` when the queue is full)."""
        if len(self.waiting) >= self.config.max_queue:
            self._metrics().rejected()
            raise QueueFullError
        req.queued = time.monotonic()
        req.prefill_target = req.prompt_tokens
        self.waiting.append(req)
        self._gauges()
        self._wake.set()

    def abort(self, req: SimRequest) -> None:
        """Client went away: drop ``req`` wherever it is (not counted as a finished request)."""
        if req.finish is not None:
            return
        if req in self.running:
            self.running.remove(req)
            self._release(req)
        elif req in self.waiting:
            self.waiting.remove(req)
        req.finish, req.finish_reason = time.monotonic(), "abort"
        req.events.put_nowait(True)
        self._gauges()

    def abort_all(self) -> None:
        """Abort every request (engine restart)."""
        for req in [*self.running, *self.waiting]:
            self.abort(req)

    # --- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        """Step forever (cancel the task to stop)."""
        while True:
            faults = self._faults()
            if faults.engine_freeze:  # a hung engine core: no step, no admission, no token counted
                self._wake.clear()
                await asyncio.sleep(FROZEN_POLL)
                continue
            self.pool.set_capacity(faults.kv_pressure)
            if not faults.brownout_queue_stall:
                self._admit()
            if not self.running:
                self._wake.clear()
                await self._idle()
                continue
            work = self._plan()
            await asyncio.sleep(self._step_time(work, faults))
            now, tally = time.monotonic(), _Tally()
            for i in range(0, len(work), EMIT_SLICE):
                if i:
                    await asyncio.sleep(0)  # let the streams of the previous slice write
                self._emit_all(work[i : i + EMIT_SLICE], now, tally)
            self._end_step(tally)

    async def _idle(self) -> None:
        timeout = 0.01 if self.waiting else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    def _admit(self) -> None:
        now = time.monotonic()
        while self.waiting and len(self.running) < self.config.max_num_seqs:
            req = self.waiting[0]
            if not self._allocate(req):
                if not self.running and self.pool.used == 0:
                    self.waiting.popleft()
                    self._finish(req, "error", now)
                    continue
                break
            self.waiting.popleft()
            req.scheduled = now
            if req.first_scheduled is None:
                req.first_scheduled = now
            self.running.append(req)
        self._gauges()

    def _allocate(self, req: SimRequest) -> bool:
        bs = self.config.block_size
        hit = 0 if self._faults().prefix_cache_off else self.pool.match_prefix(req.prompt_hashes)
        if hit * bs >= req.prefill_target:
            hit = (req.prefill_target - 1) // bs
        need = math.ceil((req.prefill_target + self.config.spec_tokens + 1) / bs) - hit
        if not self.pool.acquire(req.prompt_hashes[:hit], need):
            return False
        req.hit_hashes = list(req.prompt_hashes[:hit])
        req.private_blocks = need
        req.computed = hit * bs
        if req.preemptions == 0:
            req.num_cached = hit * bs
            self._metrics().prefix_cache(req.prompt_tokens, hit * bs)
        return True

    def _plan(self) -> list[_Work]:
        self._ensure_kv()
        budget = self.config.max_num_batched_tokens
        work: list[_Work] = []
        for req in self.running:
            if req.prefilling:
                chunk = min(req.prefill_target - req.computed, max(0, budget))
                if chunk:
                    work.append(_Work(req, chunk, False))
                    budget -= chunk
            else:
                work.append(_Work(req, 0, True))
                budget -= 1 + self.config.spec_tokens
        return work

    def _ensure_kv(self) -> None:
        """Grow each decoding request's blocks; preempt (recompute) the newest when the pool is full."""
        bs, lookahead = self.config.block_size, self.config.spec_tokens + 1
        i = 0
        while i < len(self.running):
            req = self.running[i]
            over = self.pool.used > self.pool.capacity and len(self.running) > 1
            need = math.ceil((req.prompt_tokens + req.generated + lookahead) / bs) - req.blocks_held
            if not over and (req.prefilling or need <= 0 or self.pool.grow(need)):
                if not req.prefilling and need > 0:
                    req.private_blocks += need
                i += 1
                continue
            victim = self.running[-1]
            self._preempt(victim)
            if victim is req:
                continue

    def _preempt(self, req: SimRequest) -> None:
        self.running.remove(req)
        self._release(req)
        req.preemptions += 1
        req.computed = 0
        req.prefill_target = req.prompt_tokens + req.generated
        self.waiting.appendleft(req)
        self._metrics().preempted()

    def _step_time(self, work: list[_Work], faults: Faults) -> float:
        decoding = any(w.decode for w in work)
        prefill = sum(w.prefill for w in work)
        t = step_seconds(self.config, faults, len(self.running), decoding, prefill, self.rng.random())
        return t * GPU_SATURATED_SLOWDOWN if faults.gpu_saturated else t

    def _apply(self, work: list[_Work], now: float) -> None:
        """Give every request of the step its tokens at ``now`` (one go; the loop uses slices)."""
        tally = _Tally()
        self._emit_all(work, now, tally)
        self._end_step(tally)

    def _emit_all(self, work: list[_Work], now: float, tally: _Tally) -> None:
        metrics = self._metrics()
        for w in work:
            req = w.req
            if req.finish is not None:
                continue
            if w.prefill:
                req.computed += w.prefill
                req.prefill_kv_computed += w.prefill if req.preemptions == 0 else 0
                tally.tokens += w.prefill
                if req.prefilling:
                    continue
                self._publish(req)
                new = 1
            else:
                new = 1 + self._speculate(tally)
            new = min(new, req.limit - req.generated, req.plan.n_tokens - req.generated)
            tally.tokens += new
            self._emit(req, new, now, metrics)

    def _end_step(self, tally: _Tally) -> None:
        self.steps += 1
        metrics = self._metrics()
        metrics.spec_batch(tally.drafts, tally.draft_tokens, tally.accepted, tally.per_position)
        metrics.step(tally.tokens)
        self._gauges()

    def _speculate(self, tally: _Tally) -> int:
        k = self.config.spec_tokens
        if k <= 0:
            return 0
        accepted = accepted_drafts(self.config, self.rng)
        tally.drafts += 1
        tally.draft_tokens += k
        tally.accepted += accepted
        per_position = tally.per_position
        if len(per_position) < k:
            per_position.extend([0] * (k - len(per_position)))
        for pos in range(accepted):
            per_position[pos] += 1
        return accepted

    def _emit(self, req: SimRequest, new: int, now: float, metrics: SimMetrics) -> None:
        itl = now - req.token_times[-1] if req.token_times else None
        req.generated += new
        req.token_times.extend([now] * new)
        if req.first_token is None:
            req.first_token = now
            metrics.first_token(req)
        metrics.new_tokens(req, new, itl)
        if req.generated >= req.limit or req.generated >= req.plan.n_tokens:
            self.running.remove(req)
            self._release(req)
            self._finish(req, req.natural_finish(), now)
        else:
            req.events.put_nowait(False)

    def _publish(self, req: SimRequest) -> None:
        fresh = req.prompt_hashes[len(req.hit_hashes) :]
        self.pool.publish(fresh)
        req.hit_hashes.extend(fresh)
        req.private_blocks -= len(fresh)

    def _release(self, req: SimRequest) -> None:
        self.pool.release(req.hit_hashes, req.private_blocks)
        req.hit_hashes, req.private_blocks = [], 0

    def _finish(self, req: SimRequest, reason: str, now: float) -> None:
        req.finish, req.finish_reason = now, reason
        self._metrics().finished(req)
        if self._on_finish is not None:
            self._on_finish(req)
        req.events.put_nowait(True)

    def _gauges(self) -> None:
        self._metrics().gauges(len(self.running), len(self.waiting), self.pool.usage())
