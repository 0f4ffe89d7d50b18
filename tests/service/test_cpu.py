"""``m3mon_job_cpu_seconds_total{kind}``: each job's CPU goes to its kind, tasks it starts included.

The oracle is the thread CPU clock read inside the work itself: whatever a job burns must be
counted to its kind (the counter brackets every step that burned it), nothing may be counted to a
kind that did not run, and the total counted on the loop's thread cannot exceed that thread's CPU.
"""

from __future__ import annotations

import asyncio
import threading
import time

from prometheus_client import CollectorRegistry

from monitor.service.cpu import kind_of
from monitor.service.jobs import SKIPPED
from monitor.service.metrics import ServiceMetrics
from monitor.service.schedule import Tracked

BURN = 0.05  # thread CPU seconds each piece of work burns


def _burn() -> float:
    """Burn BURN thread CPU seconds; returns what the thread clock says was burned."""
    start = time.thread_time()
    while time.thread_time() - start < BURN:
        sum(range(1000))
    return time.thread_time() - start


def _cpu(registry: CollectorRegistry, kind: str) -> float:
    value = registry.get_sample_value("m3mon_job_cpu_seconds_total", {"kind": kind})
    assert value is not None, kind
    return value


def test_the_kind_is_the_task_id_before_its_colon() -> None:
    tasks = ("scrape:m3-repo", "probe:agent", "evaluate")
    assert [kind_of(t) for t in tasks] == ["scrape", "probe", "evaluate"]


def test_a_job_and_the_tasks_it_starts_count_to_its_kind_and_threads_to_theirs() -> None:
    registry = CollectorRegistry()
    metrics = ServiceMetrics(registry)
    tracked = Tracked(metrics)
    burned: dict[str, float] = {"probe": 0.0, "write": 0.0, "evaluate": 0.0}
    loop_thread: list[float] = []

    async def one(pause: float) -> None:
        burned["probe"] += _burn()
        await asyncio.sleep(pause)  # the next step is a later step of this child task
        burned["probe"] += _burn()

    def write() -> None:
        burned["write"] += _burn()

    async def probe_round() -> object:
        await asyncio.gather(one(0.01), one(0.02))  # gather starts each probe as its own task
        await asyncio.to_thread(metrics.cpu.call, "write", write)
        return SKIPPED

    def evaluate() -> None:
        assert threading.current_thread() is not threading.main_thread()
        burned["evaluate"] += _burn()

    async def main() -> None:
        start = time.thread_time()
        uninstall = metrics.cpu.install(asyncio.get_running_loop())
        try:
            await tracked("probe:agent", probe_round)()
            await tracked("evaluate", evaluate, blocking=True)()
        finally:
            uninstall()
        loop_thread.append(time.thread_time() - start)

    asyncio.run(main())
    for kind, seconds in burned.items():
        assert seconds >= (4 * BURN if kind == "probe" else BURN)
        assert _cpu(registry, kind) >= seconds, kind
    assert _cpu(registry, "probe") <= loop_thread[0]  # only the loop's thread ran probe steps
    for kind in ("scrape", "health", "prune", "report"):
        assert _cpu(registry, kind) == 0.0, kind
    runs = registry.get_sample_value("m3mon_job_runs_total", {"task": "probe:agent", "result": "skipped"})
    assert runs == 1


def test_a_cancelled_job_counts_what_it_burned_and_the_loop_forgets_the_factory() -> None:
    registry = CollectorRegistry()
    metrics = ServiceMetrics(registry)
    burned: list[float] = []

    async def scrape() -> None:
        burned.append(_burn())
        await asyncio.sleep(3600)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        uninstall = metrics.cpu.install(loop)
        task = asyncio.create_task(Tracked(metrics)("scrape:a", scrape)())
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        uninstall()
        assert loop.get_task_factory() is None

    asyncio.run(main())
    assert _cpu(registry, "scrape") >= burned[0] > 0
