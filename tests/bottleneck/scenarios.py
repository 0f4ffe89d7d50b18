"""Bottleneck scenarios on the real simulator: one pool (with its DCGM surface), one fault, the
service's own jobs (scrape, probe) run for a bounded number of rounds, then the class's verdict.

Each :class:`Scenario` says what it injects and which verdict and tail stage the documented
rules (docs/bottleneck.md) must give (the class's TTFT objective is 1 s: a stage is a cause from
0.25 s); :func:`run_scenario` drives
:class:`~monitor.service.jobs.Jobs` against the simulator as ``m3mon run`` does, without its
schedule (rounds back to back, so a window fills in seconds, not minutes).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from monitor.bottleneck.rules import Verdict
from monitor.exporter import Exporter
from monitor.model import load_model
from monitor.service.jobs import Jobs
from monitor.sim.harness import SimHandle, running_simulator
from monitor.store import Store
from monitor.store.migrate import upgrade

#: A fast simulator (a 60 ms prefill, 4 ms per token, no jitter: the server stages outweigh the
#: loopback network as on a real pool) with per-request metrics on (the probes' server view).
FAST: dict[str, Any] = {"decode_itl": 0.004, "prefill_overhead": 0.06, "jitter": 0.0,
                        "enable_per_request_metrics": True, "answer_tokens": (24, 32), "reasoning_tokens": 8}  # fmt: skip
RUNS = 24  # probe runs per scenario (rounds of ``parallel`` runs): more than the tail's MIN_REQUESTS


@dataclass(frozen=True)
class Scenario:
    name: str
    verdict: str
    #: the stage(s) the verdict may name: one for a fault; for a control (verdict none) any engine
    #: stage may lead the tail without owning it (a busy pool's requests wait a step for a prefill)
    stage: str | frozenset[str]
    faults: dict[str, Any] = field(default_factory=dict)
    sim: dict[str, Any] = field(default_factory=dict)
    probes: tuple[str, ...] = ("chat",)
    probe: dict[str, Any] = field(default_factory=dict)
    gpu: bool = True  # the endpoint has a GPU exporter (the simulator's DCGM page)
    parallel: int = 2  # probe rounds in flight at once
    #: run while the rounds go (e.g. a scheduler that stalls in bursts); gets the simulator
    background: Callable[[SimHandle], Awaitable[None]] | None = None


async def _stream(client: httpx.AsyncClient, url: str, tokens: int) -> None:
    body = {"model": "MiniMaxAI/MiniMax-M3", "max_tokens": tokens, "ignore_eos": True, "stream": True,
            "messages": [{"role": "user", "content": "Write a long story about the sea. " * 20}]}  # fmt: skip
    try:
        async with client.stream("POST", url, json=body) as r:
            async for _ in r.aiter_bytes():
                pass
    except httpx.HTTPError:
        await asyncio.sleep(0.1)


def load(streams: int, tokens: int = 400) -> Callable[[SimHandle], Awaitable[None]]:
    """Background traffic: ``streams`` long generations back to back (the pool's own users)."""

    async def run(sim: SimHandle) -> None:
        url = f"{sim.base_url}/v1/chat/completions"
        async with httpx.AsyncClient(timeout=30) as client:

            async def one() -> None:
                while True:
                    await _stream(client, url, tokens)

            await asyncio.gather(*(one() for _ in range(streams)))

    return run


def ramp(streams: int, every: float, tokens: int = 100) -> Callable[[SimHandle], Awaitable[None]]:
    """Background traffic that builds up: one more generation loop every ``every`` seconds, up to
    ``streams`` (on a pool with fewer batch slots, its waiting queue grows)."""

    async def run(sim: SimHandle) -> None:
        url = f"{sim.base_url}/v1/chat/completions"
        async with httpx.AsyncClient(timeout=30) as client:

            async def one(delay: float) -> None:
                await asyncio.sleep(delay)
                while True:
                    await _stream(client, url, tokens)

            await asyncio.gather(*(one(k * every) for k in range(streams)))

    return run


def config(tmp: Path, sim: SimHandle, sc: Scenario) -> Path:
    endpoint: dict[str, Any] = {"name": "pool", "base_url": sim.base_url, "model": "MiniMaxAI/MiniMax-M3",
                                "classes": ["chat"], "scrape_interval": "60s"}  # fmt: skip
    if sc.gpu:
        endpoint["gpu_exporter"] = {"url": f"{sim.base_url}/dcgm/metrics", "kind": "dcgm"}
    doc = {
        "version": "m3mon/v1",
        "endpoints": [endpoint],
        "request_classes": [{"name": "chat", "max_context_tokens": 32768, "probes": list(sc.probes),
                             "probe": {"interval": "1h", "jitter": "0.1s", "timeout": "20s", **sc.probe},
                             "slos": [{"name": "availability", "sli": "availability", "objective": 99},
                                      {"name": "ttft", "sli": "ttft", "threshold": "1s", "objective": 99}]}],
        "storage": {"url": f"sqlite:///{tmp / 'm3mon.db'}", "buffer_dir": str(tmp / "spool")},
    }  # fmt: skip
    path = tmp / "m3mon.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


async def _drive(jobs: Jobs, sim: SimHandle, sc: Scenario) -> Verdict | None:
    model, endpoint = jobs.model, jobs.model.endpoints[0]
    await jobs.scrape(endpoint)  # the first reading: the next scrapes give intervals
    side = asyncio.create_task(sc.background(sim)) if sc.background is not None else None
    try:
        for _ in range(-(-RUNS // sc.parallel)):
            await asyncio.gather(*(jobs.probe("chat", jitter=False) for _ in range(sc.parallel)))
            await jobs.scrape(endpoint)
    finally:
        if side is not None:
            side.cancel()
    (verdict,) = await asyncio.to_thread(jobs.assess)
    await jobs.close()
    assert verdict.request_class == model.classes[0].name
    return verdict


def run_scenario(tmp: Path, sc: Scenario) -> tuple[Verdict, str, float]:
    """The scenario's verdict, the exporter's page and the seconds it took to reach it."""
    with running_simulator(dcgm_gpus=2 if sc.gpu else 0, **{**FAST, **sc.sim}, faults=sc.faults) as sim:
        model = load_model(config(tmp, sim, sc))
        upgrade(model.storage.url)
        store, exporter = Store(model.storage.url), Exporter(model)
        started = time.monotonic()
        try:
            verdict = asyncio.run(_drive(Jobs(model, store, exporter), sim, sc))
        finally:
            store.close()
        assert verdict is not None
        return verdict, exporter.render().decode(), time.monotonic() - started
