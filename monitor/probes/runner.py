"""Running a round of probes: every (endpoint, class, kind) once, isolated and bounded.

:func:`run_round` plans the probes of the chosen classes and kinds, spreads their start over
each class's ``jitter``, runs at most ``concurrency`` at a time per endpoint
(:class:`asyncio.Semaphore`), bounds each by its class's ``timeout`` (a ``timeout`` verdict: the
service's fault) and turns any exception raised by a prober into a ``monitor_error`` result with a
log line (the monitor's fault: no event of any service SLI), so one broken prober never stops the
others. Results come back in plan order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import httpx

from monitor import conventions as cv
from monitor.errors import ProbeError
from monitor.model import Model
from monitor.probes import PROBERS, Prober
from monitor.probes.metrics import ProbeMetrics
from monitor.probes.progress import Progress, recording
from monitor.probes.result import ProbeResult, Timings
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.wire import probe_client

log = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 4


@dataclass(frozen=True)
class PlannedProbe:
    target: Target
    spec: ProbeSpec


def plan_round(
    model: Model, classes: Iterable[str] | None = None, kinds: Iterable[str] | None = None
) -> list[PlannedProbe]:
    """The probes of one round; unknown class or kind names raise :class:`ProbeError`."""
    wanted_classes = list(classes) if classes is not None else [c.name for c in model.classes]
    wanted_kinds = set(kinds) if kinds is not None else None
    known = {c.name for c in model.classes}
    unknown = [c for c in wanted_classes if c not in known] + sorted((wanted_kinds or set()) - set(PROBERS))
    if unknown:
        raise ProbeError(f"unknown request class or probe kind: {', '.join(unknown)}")
    planned: list[PlannedProbe] = []
    for name in wanted_classes:
        klass = model.request_class(name)
        for endpoint in model.endpoints_for(name):
            for kind in klass.probe.kinds:
                if wanted_kinds is None or kind in wanted_kinds:
                    planned.append(PlannedProbe(Target(endpoint, klass), ProbeSpec.for_class(klass, kind)))
    return planned


def _failed(p: PlannedProbe, started_at: float, timings: Timings, reason: str, detail: str,
            crashed: bool = False) -> ProbeResult:  # fmt: skip
    return ProbeResult(
        endpoint=p.target.endpoint.name, request_class=p.target.request_class.name, kind=p.spec.kind,
        started_at=started_at, reason=reason, timings=timings, detail=detail[:200],
        log=(detail[:200],), crashed=crashed,
    )  # fmt: skip


async def run_probe(p: PlannedProbe, client: httpx.AsyncClient, prober: Prober | None = None) -> ProbeResult:
    """One probe with its timeout and crash isolation; never raises (except on cancellation).

    The result is stamped with ``finished_at``, the wall-clock instant its outcome was known
    (answer finished, failure seen, timeout expired): its SLI events happen then.
    """
    result = await _run_probe(p, client, prober)
    return dataclasses.replace(result, finished_at=time.time())


def _timed_out(p: PlannedProbe, started_at: float, elapsed: float, progress: Progress) -> ProbeResult:
    """The run the timeout cut off, with the trace id and first token it had (monitor.probes.progress)."""
    ttft = progress.ttft()
    detail = f"probe did not finish within {p.spec.plan.timeout:g}s"
    if ttft is not None:
        detail += f" (first token after {ttft:.3g}s)"
    result = _failed(p, started_at, Timings(e2e=elapsed, ttft=ttft), "timeout", detail)
    return dataclasses.replace(result, trace_id=progress.trace_id)


async def _run_probe(p: PlannedProbe, client: httpx.AsyncClient, prober: Prober | None) -> ProbeResult:
    prober = prober if prober is not None else PROBERS[p.spec.kind]
    started_at, t0 = time.time(), time.monotonic()
    try:
        with recording() as progress:
            return await asyncio.wait_for(prober(p.target, p.spec, client), timeout=p.spec.plan.timeout)
    except TimeoutError:  # the service did not answer in time: its fault, an availability failure
        return _timed_out(p, started_at, time.monotonic() - t0, progress)
    except Exception as exc:  # the monitor's fault: no service timing, no service SLI event
        log.exception(
            "%s prober crashed on %s/%s", p.spec.kind, p.target.endpoint.name, p.target.request_class.name
        )
        elapsed = time.monotonic() - t0
        detail = f"prober crashed after {elapsed:.3g}s: {type(exc).__name__}: {exc}"
        return _failed(p, started_at, Timings(), cv.REASON_MONITOR_ERROR, detail, crashed=True)


async def run_round(
    model: Model,
    classes: Iterable[str] | None = None,
    kinds: Iterable[str] | None = None,
    client: httpx.AsyncClient | None = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    jitter: bool = True,
    metrics: ProbeMetrics | None = None,
    on_result: Callable[[ProbeResult], Awaitable[None]] | None = None,
    only: Callable[[PlannedProbe], bool] | None = None,
    purpose: str = cv.PURPOSE_SLI,
) -> list[ProbeResult]:
    """Run every planned probe once (or those ``only`` accepts: fleet slot claims); results in plan order.
    ``purpose``: the results' (:attr:`ProbeResult.purpose`; a confirmation round's are no SLI events).

    Each result is observed into ``metrics`` and handed to ``on_result`` the moment it completes,
    not when the round ends: its events happen then, and a store evaluating that minute must
    already have it (a slow probe of the same round may take minutes more).
    """
    planned = [p for p in plan_round(model, classes, kinds) if only is None or only(p)]
    if client is None:
        async with probe_client() as own:
            return await run_round(model, classes, kinds, own, concurrency=concurrency, jitter=jitter,
                                   metrics=metrics, on_result=on_result, only=only,
                                   purpose=purpose)  # fmt: skip
    gates = {e.name: asyncio.Semaphore(concurrency) for e in model.endpoints}

    async def one(p: PlannedProbe) -> ProbeResult:
        if jitter and p.spec.plan.jitter > 0:
            await asyncio.sleep(random.uniform(0.0, p.spec.plan.jitter))
        async with gates[p.target.endpoint.name]:
            result = await run_probe(p, client)
        if purpose != result.purpose:
            result = dataclasses.replace(result, purpose=purpose)
        if metrics is not None:
            metrics.observe(result)
        if on_result is not None:
            await on_result(result)
        return result

    return list(await asyncio.gather(*(one(p) for p in planned)))
