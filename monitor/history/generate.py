"""``write_history``: a week (or any number of days) of what the monitor would have recorded.

Probe results, OTLP spans (the probes' and, given a tenant mix, real requests':
:mod:`monitor.history.traffic`), scrape intervals and deployment fingerprints are drawn from the
simulator's models (:mod:`monitor.history.pool`) under the story of :mod:`monitor.history.scenario`,
built into the store's own ops (:mod:`monitor.store.ops`) and written in bulk; the stretch of the
database outage goes through the real buffered writer. Then the evaluator stores an evaluation of
every SLO every five minutes (:mod:`monitor.history.evaluate`). Seeded: the same model, end, days and
seed give the same rows.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import numpy as np

from monitor.history import probes, server
from monitor.history.evaluate import evaluate_history
from monitor.history.pool import Pool, PoolState, make_pool, state
from monitor.history.scenario import DAY, Scenario, scenario
from monitor.history.traffic import RealTraffic, traffic_runs
from monitor.history.write import Outage, apply_bulk, finish, through_outage
from monitor.model import Endpoint, Model, RequestClass
from monitor.store import DeploymentFingerprint, Store
from monitor.store.ops import Op, deployment_op, endpoints_op, probe_op, signals_op, spans_op

#: Length of the history's scrape intervals. The service scrapes every 15 s; a week of 15 s intervals
#: of three pools would be ~120k rows with eight histograms each (~500 MB), so history keeps five
#: minutes per interval (the collector's interval arithmetic is the same for any length).
SCRAPE_SECONDS = 300.0


@dataclass
class History:
    """What :func:`write_history` wrote, and how long each part took (seconds)."""

    scenario: Scenario
    probes: int = 0
    spans: int = 0
    requests: int = 0  # real requests of the tenant mix served (their spans are in ``spans``)
    intervals: int = 0
    slices: int = 0
    spooled: int = 0
    evaluations: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def _state_cache(pool: Pool, scn: Scenario) -> Callable[[float], PoolState]:
    """The pool's state, computed once per minute (load and faults change slowly)."""

    @cache
    def minute(m: int) -> PoolState:
        return state(pool, scn, m * 60.0 + 30.0)

    return lambda t: minute(int(t // 60))


def _class_runs(
    model: Model, rc: RequestClass, interval: float, scn: Scenario, pools: Mapping[str, Pool],
    states: Mapping[str, Callable[[float], PoolState]], rng: random.Random,
) -> list[tuple[float, Op]]:  # fmt: skip
    """(event time, op) of every probe run and its spans for one class over the history."""
    plan, out = rc.probe, []
    itl = any(s.sli == "itl" and s.source == "probes" for s in rc.slos)
    for ep in model.endpoints_for(rc.name):
        at = scn.start + rng.uniform(0, interval)
        while at < scn.end - plan.timeout:
            for i, kind in enumerate(plan.kinds):
                trace = f"{rng.getrandbits(128) | 1:032x}"
                started = at + rng.uniform(0, plan.jitter) + i * 0.002
                run = probes.draw_run(kind, plan, started, states[ep.name], rng, trace)
                result = probes.to_result((ep.name, rc.name, kind, ep.model), run, plan, trace, itl)
                out.append((result.completed_at, probe_op(model, result)))
                if run.spans and pools[ep.name].otlp:
                    out.append((max(s.end for s in run.spans), spans_op(run.spans)))
            at += interval
    return out


def _intervals(
    model: Model, ep: Endpoint, pool: Pool, scn: Scenario, state_at: Callable[[float], PoolState], seed: int
) -> list[tuple[float, Op]]:
    first = (scn.start // SCRAPE_SECONDS + 1) * SCRAPE_SECONDS
    ends = list(np.arange(first, scn.end + 1e-6, SCRAPE_SECONDS).tolist())
    rng = np.random.default_rng(seed)
    signals = server.intervals(pool, ep.model, ends, SCRAPE_SECONDS, state_at, rng)
    return [(s.end, signals_op(model, ep.name, s)) for s in signals]


def fingerprint(pool: Pool, ep: Endpoint, at: float) -> DeploymentFingerprint:
    """What the collector would read from the pool's simulator at ``at``, plus the config's facts."""
    cfg = pool.config_at(at)
    return DeploymentFingerprint(
        vllm_version=pool.version_at(at),
        max_model_len=cfg.max_model_len,
        block_size=cfg.block_size,
        kv_cache_dtype="auto",
        prefix_caching=True,
        gpu_memory_utilization=cfg.gpu_memory_utilization,
    ).with_config(ep.deployment)


def _deployments(model: Model, pools: Mapping[str, Pool], scn: Scenario) -> list[Op]:
    ops = []
    for ep in model.endpoints:
        pool = pools[ep.name]
        seen = [scn.start, *([pool.changed_at] if pool.changed_at else []), scn.end]
        ops += [deployment_op(ep.name, fingerprint(pool, ep, t), t) for t in seen]
    return ops


def _draw(
    model: Model, scn: Scenario, pools: Mapping[str, Pool], intervals: Mapping[str, float], seed: int,
    traffic: RealTraffic | None = None, hist: History | None = None,
) -> list[tuple[float, Op]]:  # fmt: skip
    """Every probe, spans, traffic slices and scrape op of the history with its event time, oldest first."""
    states = {name: _state_cache(pool, scn) for name, pool in pools.items()}
    timed: list[tuple[float, Op]] = []
    if traffic is not None:
        exporting = tuple(p for p in traffic.pools if p in pools and pools[p].otlp)
        real, served = traffic_runs(model, replace(traffic, pools=exporting), scn, states, seed)
        timed += real
        if hist is not None:
            hist.requests = served
    for rc in model.classes:
        rng = random.Random(f"{seed}:{rc.name}")
        timed += _class_runs(model, rc, intervals.get(rc.name, rc.probe.interval), scn, pools, states, rng)
    for i, ep in enumerate(model.endpoints):
        timed += _intervals(model, ep, pools[ep.name], scn, states[ep.name], seed * 1000 + i)
    timed.sort(key=lambda item: item[0])
    return timed


def _count(hist: History, ops: list[Op]) -> None:
    hist.probes += sum(op["op"] == "probe" for op in ops)
    hist.spans += sum(len(op["rows"]) for op in ops if op["op"] == "spans")
    hist.intervals += sum(op["op"] == "scrape" for op in ops)
    hist.slices += sum(len(op.get("slices", ())) for op in ops)


def _write(
    store: Store, timed: list[tuple[float, Op]], hist: History, outage: tuple[Outage, Path] | None
) -> None:
    """Bulk-write the ops; those of the scenario's outage go through the buffered writer."""
    scn = hist.scenario
    before = [op for t, op in timed if t < scn.outage[0]]
    during = [op for t, op in timed if scn.outage[0] <= t < scn.outage[1]]
    after = [op for t, op in timed if t >= scn.outage[1]]
    for ops in (before, during, after):
        _count(hist, ops)
    apply_bulk(store, before)
    if outage is not None:
        hist.spooled = through_outage(store, during, outage[1], outage[0])
    else:
        apply_bulk(store, during)
    apply_bulk(store, after)
    finish(store)


def planned(model: Model, start: float, end: float) -> tuple[tuple[str, float, float], ...]:
    """(pool, start, end) of every maintenance occurrence in ``(start, end]`` covering a whole endpoint."""
    return tuple(
        (pool, o.start, o.end)
        for w in model.maintenance.windows
        for o in w.between(start, end)
        for pool in sorted(w.whole_endpoints)
    )


def write_history(
    model: Model,
    store: Store,
    end: float,
    days: float,
    *,
    probe_intervals: Mapping[str, float] | None = None,
    otlp: Collection[str] | None = None,
    outage: tuple[Outage, Path] | None = None,
    traffic: RealTraffic | None = None,
    seed: int = 0,
) -> History:
    """Write ``days`` of history ending at ``end`` into ``store`` (its schema must exist).

    ``probe_intervals`` overrides a class's probe interval (the demo probes every few seconds but
    its history at the example config's intervals); ``otlp`` names the endpoints that export spans
    (default all); ``outage`` = (how to take the database away, the spool folder) sends the writes
    of the scenario's outage through the buffered writer; ``traffic`` adds the real requests of a
    tenant mix on pools that export spans (:mod:`monitor.history.traffic`).
    """
    scn = scenario(end, days, planned(model, end - days * DAY, end))
    hist, clock = History(scn), time.perf_counter()
    pools = {ep.name: make_pool(ep.name, ep.deployment.max_model_len or 131072, scn,
                                otlp is None or ep.name in otlp) for ep in model.endpoints}  # fmt: skip
    timed = _draw(model, scn, pools, probe_intervals or {}, seed, traffic, hist)
    hist.seconds["draw"], clock = time.perf_counter() - clock, time.perf_counter()
    store.apply([endpoints_op(model.endpoints), *_deployments(model, pools, scn)])
    _write(store, timed, hist, outage)
    hist.seconds["write"], clock = time.perf_counter() - clock, time.perf_counter()
    hist.evaluations = evaluate_history(store, model, scn.start, scn.end)
    hist.seconds["evaluate"] = time.perf_counter() - clock
    return hist
