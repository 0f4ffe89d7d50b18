"""The demo's live real traffic: the tenant mix sent to the interactive pool while the story runs.

:func:`send_live` posts :data:`~monitor.demo.config.DEMO_MIX`'s requests to one simulator at a
steady rate until told to stop. The simulator serves them, tags each span with the request's tenant
and priority (``tenant_span_attributes``) and exports it to the monitor, which counts it for the
real-traffic SLOs, as it would the spans of a gateway in front of vLLM.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

import httpx

from monitor.sim.tenants import TenantMix, TenantRequest

#: Requests in flight at most (the slow tenant's answers take seconds).
CONCURRENCY = 16
#: Requests drawn from the mix at a time (each chunk with its own seed).
CHUNK = 100
#: Seconds the requests in flight at the stop are given to finish (the slow tenant's take ~7 s);
#: a request cut off would be an abort, a bad event of its tenant that no user caused.
DRAIN = 15.0


async def send_live(base_url: str, mix: TenantMix, rate: float, stop: asyncio.Event) -> dict[int, int]:
    """Send ``mix``'s requests to ``base_url`` at ``rate`` per second until ``stop`` is set; returns
    the count of answers per HTTP status (0: no answer). Requests in flight then are given
    :data:`DRAIN` seconds to finish."""
    statuses: dict[int, int] = {}
    gate = asyncio.Semaphore(CONCURRENCY)
    tasks: set[asyncio.Task[None]] = set()

    async def one(client: httpx.AsyncClient, req: TenantRequest) -> None:
        async with gate:
            try:
                status = (await client.post(f"{base_url}/v1/chat/completions", json=req.body)).status_code
            except httpx.HTTPError:
                status = 0
        statuses[status] = statuses.get(status, 0) + 1

    async with httpx.AsyncClient(timeout=60.0) as client:
        k = 0
        while not stop.is_set():
            reqs = replace(mix, seed=mix.seed + k).requests(CHUNK)
            for req in reqs:
                task = asyncio.create_task(one(client, req))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0 / rate)
                if stop.is_set():
                    break
            k += 1
        if tasks:
            await asyncio.wait(list(tasks), timeout=DRAIN)
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return statuses
