"""``m3mon demo``: the whole monitor on embedded defaults, telling one incident's story.

Simulators stand in for the three M3 pools of ``examples/monitor.yaml``; ``m3mon run`` watches
them with SQLite as the store, and a skewed mix of tenants sends real traffic to the interactive
pool (:mod:`monitor.demo.traffic`). After a healthy period the interactive pool browns out (latency
×5 and a share of 500s), then recovers. The demo prints progress and a summary (SLO status per
class, the burn alerts that fired, where latency went), and leaves the derived config, database,
generated rules and dashboards, and the weekly report in one output folder.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from monitor.demo import DEFAULT_HISTORY_DAYS
from monitor.demo.compact import compact
from monitor.demo.config import (
    DEMO_MIX,
    LIVE_TRAFFIC_RATE,
    TRAFFIC_POOL,
    demo_config,
    demo_database,
    write_demo_config,
)
from monitor.demo.history import NO_SPANS, history_end, planned_upgrade, write_demo_history
from monitor.demo.summary import print_summary, progress_line, report_period
from monitor.demo.traffic import send_live
from monitor.model import Model, load_model
from monitor.service.service import Service
from monitor.sim.harness import SimHandle, running_simulator
from monitor.store.migrate import upgrade

INCIDENT_POOL = "m3-interactive"
#: Evaluate every 5 s so a few minutes of demo show the burn as it happens.
DEMO_EVALUATION_STEP = 5.0
INCIDENT_FAULTS = {"latency_multiplier": 5.0, "error_rate": 0.3, "error_status": 500}


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float
    action: Callable[[dict[str, SimHandle]], None]


def _healthy(sims: dict[str, SimHandle]) -> None:
    for sim in sims.values():
        sim.clear_faults()


def _incident(sims: dict[str, SimHandle]) -> None:
    sims[INCIDENT_POOL].set_faults(**INCIDENT_FAULTS)


def phases(scale: float) -> tuple[Phase, ...]:
    return (
        Phase("healthy", 60 * scale, _healthy),
        Phase(f"incident: {INCIDENT_POOL} latency x5 and 30% HTTP 500", 60 * scale, _incident),
        Phase("recovery", 45 * scale, _healthy),
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def simulators(
    model: Model, otlp: str, ports: dict[str, int] | None = None
) -> Iterator[dict[str, SimHandle]]:
    """One simulator per endpoint of ``model``, sized like its pool, exporting spans to ``otlp``
    (the monitor's ``/v1/traces``) except the pools in :data:`NO_SPANS`, under the endpoint's name
    and with each request's tenant and priority; each on its port in ``ports`` (OSError if taken),
    else on a free one."""
    with ExitStack() as stack:
        sims = {
            ep.name: stack.enter_context(
                running_simulator(
                    port=(ports or {}).get(ep.name, 0),
                    max_model_len=ep.deployment.max_model_len or 131072,
                    seed=i,
                    otlp_traces_endpoint=None if ep.name in NO_SPANS else otlp,
                    service_name=ep.name,
                    tenant_span_attributes=True,
                )
            )
            for i, ep in enumerate(model.endpoints)
        }
        yield sims


def _flush_spans(sims: dict[str, SimHandle]) -> None:
    """Export the spans the simulators still hold while the monitor is there to receive them."""
    for sim in sims.values():
        if sim.sim.tracer is not None:
            sim.sim.tracer.provider.force_flush(5000)


#: (phase name, wall-clock start, wall-clock end) of each phase that ran.
PhaseTimes = list[tuple[str, float, float]]


async def _real_traffic(service: Service, sims: dict[str, SimHandle], stop: asyncio.Event) -> None:
    """Send the tenant mix to the traffic pool until ``stop``, when the demo's config counts it."""
    if TRAFFIC_POOL not in sims or not service.model.traffic.tenants:
        return
    print(
        f"  real traffic: {len(DEMO_MIX.tenants())} tenants ({', '.join(DEMO_MIX.heavy)} heavy, "
        f"{DEMO_MIX.slow} slow, a tail) at {LIVE_TRAFFIC_RATE:g} request/s to {TRAFFIC_POOL}",
        flush=True,
    )
    await send_live(sims[TRAFFIC_POOL].base_url, DEMO_MIX, LIVE_TRAFFIC_RATE, stop)


async def _drive(service: Service, sims: dict[str, SimHandle], scale: float) -> PhaseTimes:
    """Run the phases; returns (name, wall-clock start, wall-clock end) of each."""
    task = asyncio.create_task(service.serve())
    stop = asyncio.Event()
    sender = asyncio.create_task(_real_traffic(service, sims, stop))
    started = time.monotonic()
    done: PhaseTimes = []
    try:
        for phase in phases(scale):
            print(f"\n== {phase.name} ({phase.seconds:.0f} s)", flush=True)
            phase.action(sims)
            begin = time.time()
            end = time.monotonic() + phase.seconds
            while time.monotonic() < end:
                await asyncio.sleep(min(10.0, max(0.0, end - time.monotonic())))
                print(progress_line(service, time.monotonic() - started), flush=True)
            done.append((phase.name, begin, time.time()))
    finally:
        stop.set()
        await sender
        await asyncio.to_thread(_flush_spans, sims)
        service.stopping.set()
        await task
    return done


def run_demo(example: Path, out: Path, scale: float = 1.0, history: float = DEFAULT_HISTORY_DAYS) -> Model:
    """Run the story (after ``history`` days of generated history); returns the demo model."""
    # The scheduler's "skipped: maximum number of running instances" notes are expected when a
    # probe round outlasts its interval during the incident; keep the story readable.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    if out.exists():  # the command line refused an earlier output unless --replace was given
        shutil.rmtree(out)
    demo_database(out).parent.mkdir(parents=True)
    print(f"m3mon demo: output folder {out}")
    port = _free_port()
    with simulators(load_model(example), f"http://127.0.0.1:{port}") as sims:
        cfg = demo_config(example, out, {n: s.base_url for n, s in sims.items()}, port)
        end = history_end()
        if history > 0:
            cfg["maintenance"] = [planned_upgrade(end, history)]
        config_path = out / "demo-config.yaml"
        write_demo_config(cfg, config_path)
        model = load_model(config_path)
        upgrade(model.storage.url)
        for name, sim in sims.items():
            print(f"  simulator for {name:<15} {sim.base_url}")
        print(f"  exporter   http://127.0.0.1:{port}/metrics   store {model.storage.url}")
        start = None
        if history > 0:
            hist = write_demo_history(
                model, load_model(example), demo_database(out), out / "history-spool", history, end
            )
            start = hist.scenario.start
        service = Service(model, send_reports=False, evaluation_step=DEMO_EVALUATION_STEP)
        done = asyncio.run(_drive(service, sims, scale))
    period = report_period(start, datetime.now(UTC))
    print(compact(model.storage.url, period.start.timestamp()).line(), flush=True)
    print_summary(model, out, done, start)
    return model
