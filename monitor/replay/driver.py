"""The replay driver: sends a profile's requests to one endpoint at a rate or a concurrency.

* **Rate mode** (``rate``, or the profile's own arrival rate): request ``i`` is sent at its
  arrival offset from :func:`monitor.replay.arrivals.schedule`, whether or not earlier ones
  finished (open loop, as ``vllm bench serve --request-rate``).
* **Concurrency mode** (``concurrency`` N): N workers each send the next request as soon as their
  previous one finished (closed loop, ``--max-concurrency`` with an infinite rate).

No request starts after ``duration``; the run then waits for those in flight (each bounded by
``timeout``). Requests go through the probes' streaming client
(:func:`monitor.probes.exchange.stream_chat` over the probes' arrival-stamping transport), so a
replay and a probe time a stream the same way. Each request gets its own connection by default
(``fresh_connections``; connecting is not part of TTFT, which starts when the body was sent): on
a kept-alive connection the simulator's first frames of a stream were measured arriving ~40 ms
late (a delayed-ACK stall; tests/replay), which would inflate every TTFT.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from monitor.model import SLO
from monitor.probes.target import Target
from monitor.probes.tokens import calibrate
from monitor.probes.wire import StampingTransport
from monitor.replay.arrivals import schedule
from monitor.replay.profile import TrafficProfile
from monitor.replay.requests import Outcome, Planned, Sender, plan_request
from monitor.replay.sizing import MEASURED
from monitor.replay.summary import ReplaySummary, summarize

Progress = Callable[[int, int, float], None]  # (finished, failed, elapsed seconds)


@dataclass(frozen=True)
class Load:
    """How hard to drive: ``rate`` requests/s (open loop) or ``concurrency`` (closed loop)."""

    duration: float
    rate: float | None = None
    concurrency: int | None = None

    @property
    def label(self) -> str:
        if self.concurrency is not None:
            return f"concurrency {self.concurrency}"
        return f"rate {self.rate:g}/s" if self.rate is not None else "profile rate"


@dataclass
class Run:
    """Outcomes and finish times of one replay run."""

    outcomes: list[Outcome]
    ends: list[float]
    started: float
    wall_start: float
    sizing: str = MEASURED  # how its prompts were sized (monitor.replay.sizing)

    def summary(self, slos: Sequence[SLO]) -> ReplaySummary:
        return summarize(self.outcomes, self.ends, slos, self.sizing)


class _Tally:
    def __init__(self, progress: Progress | None, started: float) -> None:
        self.outcomes: list[Outcome] = []
        self.ends: list[float] = []
        self.progress, self.started = progress, started

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.ends.append(time.monotonic())
        if self.progress is not None:
            failed = sum(1 for o in self.outcomes if not o.ok)
            self.progress(len(self.outcomes), failed, time.monotonic() - self.started)


async def replay(
    target: Target,
    profile: TrafficProfile,
    load: Load,
    *,
    timeout: float = 300.0,
    seed: int = 0,
    progress: Progress | None = None,
    fresh_connections: bool = True,
) -> Run:
    """Drive ``target`` with ``profile`` under ``load``; every request is awaited before returning."""
    rng = random.Random(seed)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0 if fresh_connections else None)
    async with httpx.AsyncClient(transport=StampingTransport(limits), limits=limits) as client:
        sender = Sender(target, profile, timeout, seed + 1, await calibrate(client, target.endpoint))
        wall, started = time.time(), time.monotonic()
        tally = _Tally(progress, started)
        if load.concurrency is not None:
            await _closed_loop(sender, client, profile, rng, load, tally, started)
        else:
            offsets = schedule(profile.arrival, rng, load.duration, load.rate)
            planned = [plan_request(profile, rng, i, off) for i, off in enumerate(offsets)]
            gate = asyncio.Semaphore(PREPARING)
            await asyncio.gather(*(_at(sender, client, p, started, tally, gate) for p in planned))
    order = sorted(range(len(tally.outcomes)), key=lambda i: tally.outcomes[i].planned.index)
    return Run(
        [tally.outcomes[i] for i in order], [tally.ends[i] for i in order], started, wall, sender.sizing
    )


#: Prompts measured with the server's tokenizer at once, ahead of their send times (rate mode).
PREPARING = 4


async def _at(
    sender: Sender,
    client: httpx.AsyncClient,
    p: Planned,
    started: float,
    tally: _Tally,
    gate: asyncio.Semaphore,
) -> None:
    """Prepare ``p`` ahead of its time (in schedule order, :data:`PREPARING` at once), then send it
    at its offset: sizing a prompt never delays an open-loop arrival it has time for."""
    async with gate:
        messages = await sender.prepare(client, p)
    delay = started + p.offset - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)
    tally.add(await sender.send(client, p, messages))


async def _closed_loop(
    sender: Sender,
    client: httpx.AsyncClient,
    profile: TrafficProfile,
    rng: random.Random,
    load: Load,
    tally: _Tally,
    started: float,
) -> None:
    counter = iter(range(1 << 30))

    async def worker() -> None:
        while time.monotonic() - started < load.duration:
            p = plan_request(profile, rng, next(counter), 0.0)
            tally.add(await sender.send(client, p))

    await asyncio.gather(*(worker() for _ in range(load.concurrency or 1)))
