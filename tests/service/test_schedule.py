"""What ``m3mon run`` schedules, read from the real APScheduler before it starts."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from apscheduler.job import Job
from prometheus_client import CollectorRegistry

from monitor.model import load_model
from monitor.service.metrics import ServiceMetrics
from monitor.service.schedule import new_scheduler, rounds_in_flight
from monitor.service.service import Service
from monitor.store.migrate import upgrade

EXAMPLE = Path(__file__).parents[2] / "examples" / "monitor.yaml"


def _service(tmp_path: Path, **report: object) -> Service:
    cfg = yaml.safe_load(EXAMPLE.read_text())
    cfg["storage"] = {"url": f"sqlite:///{tmp_path / 'm.db'}", "buffer_dir": str(tmp_path / "spool")}
    cfg["report"] = {**cfg["report"], **report}
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(cfg))
    model = load_model(path)
    upgrade(model.storage.url)
    return Service(model)


def test_every_endpoint_class_and_upkeep_job_is_scheduled(tmp_path: Path) -> None:
    service = _service(tmp_path)
    try:
        service._schedule()
        jobs = {j.id: j for j in service.scheduler.get_jobs()}
        model = service.model
        expected = {f"scrape:{e.name}" for e in model.endpoints} | {
            f"health:{e.name}" for e in model.endpoints
        }
        expected |= {f"probe:{c.name}" for c in model.classes} | {"evaluate", "assess", "prune", "report"}
        assert set(jobs) == expected
        assert jobs["scrape:m3-extended"].trigger.interval.total_seconds() == 30
        assert jobs["probe:repo-analysis-128k"].trigger.interval.total_seconds() == 300
        report = str(jobs["report"].trigger)
        assert "day_of_week='mon'" in report and "hour='9'" in report and "minute='0'" in report
        assert jobs["report"].func.__name__ == "weekly_job"
    finally:
        service.store.close()


def test_no_report_job_without_recipients_or_webhook(tmp_path: Path) -> None:
    service = _service(tmp_path, recipients=[], webhook_url=None)
    try:
        service._schedule()
        assert "report" not in {j.id for j in service.scheduler.get_jobs()}
    finally:
        service.store.close()


def test_a_run_the_busy_loop_made_late_still_runs_and_says_how_late() -> None:
    """A probe round due 1 s after start, on a loop blocked until 2.7 s (a loaded machine at
    start-up), runs late instead of being skipped until the next hourly slot (APScheduler's
    default 1 s grace), and ``m3mon_job_start_delay_seconds`` shows it started >= 1.7 s late."""
    ran: list[float] = []
    registry = CollectorRegistry()
    metrics = ServiceMetrics(registry)
    metrics.plan(["probe:c"])

    async def job() -> None:
        ran.append(time.monotonic())

    async def main() -> None:
        sched = new_scheduler(metrics)
        due = datetime.now(UTC) + timedelta(seconds=1)
        sched.add_job(job, "interval", seconds=3600, next_run_time=due, id="probe:c")
        sched.start()
        try:
            await asyncio.sleep(0.2)
            time.sleep(2.5)  # the loop is busy past the run time and its default grace
            for _ in range(40):
                if ran:
                    break
                await asyncio.sleep(0.05)
        finally:
            sched.shutdown(wait=False)

    asyncio.run(main())
    assert len(ran) == 1
    delay = registry.get_sample_value("m3mon_job_start_delay_seconds", {"task": "probe:c"})
    assert delay is not None and delay >= 1.7


def test_the_service_plans_on_the_late_tolerant_scheduler(tmp_path: Path) -> None:
    service = _service(tmp_path)

    async def planned() -> list[Job]:
        service._schedule()
        service.scheduler.start(paused=True)  # job defaults are applied when the scheduler starts
        try:
            return list(service.scheduler.get_jobs())
        finally:
            service.scheduler.shutdown(wait=False)

    try:
        jobs = asyncio.run(planned())
    finally:
        service.store.close()
    assert {j.id for j in jobs} >= {"evaluate", "probe:interactive-32k"}
    classes = {f"probe:{c.name}": c for c in service.model.classes}
    for job in jobs:
        assert job.misfire_grace_time is None, job.id
        rounds = rounds_in_flight(classes[job.id]) if job.id in classes else 1
        assert job.coalesce and job.max_instances == rounds, job.id
    # a class probed every 5 min with a 300 s timeout: two rounds at once, so the next starts on time
    assert next(j for j in jobs if j.id == "probe:repo-analysis-128k").max_instances == 2


def test_a_slow_round_does_not_keep_the_next_from_starting() -> None:
    """Issue 41: a class's probe round that waits on a slow endpoint held its one job slot, so
    rounds were skipped (50-70 s apart instead of 15 s on a real vLLM under overload): fewer
    probe events exactly while the endpoint was slow. A round here takes 2.5 s at a 1 s interval
    and a 5 s timeout: the rounds start every second (the old single slot: a start only once the
    previous round ended), and a run that cannot start is counted as missed."""
    registry = CollectorRegistry()
    metrics = ServiceMetrics(registry)
    metrics.plan(["probe:slow", "probe:one-slot"])
    cls = load_model(EXAMPLE).classes[0]
    slow = dataclasses.replace(cls, probe=dataclasses.replace(cls.probe, interval=1.0, timeout=5.0))
    starts: dict[str, list[float]] = {"probe:slow": [], "probe:one-slot": []}

    def job(task: str) -> Any:
        async def run() -> None:
            starts[task].append(time.monotonic())
            with contextlib.suppress(asyncio.CancelledError):  # the shutdown below cancels it
                await asyncio.sleep(2.5)

        return run

    async def main() -> None:
        sched = new_scheduler(metrics)
        due = datetime.now(UTC) + timedelta(seconds=0.2)
        sched.add_job(job("probe:slow"), "interval", seconds=1, next_run_time=due, id="probe:slow",
                      max_instances=rounds_in_flight(slow))  # fmt: skip
        sched.add_job(job("probe:one-slot"), "interval", seconds=1, next_run_time=due, id="probe:one-slot")
        sched.start()
        try:
            await asyncio.sleep(4.0)
        finally:
            sched.shutdown(wait=False)

    asyncio.run(main())
    assert rounds_in_flight(slow) == 6
    assert len(starts["probe:slow"]) >= 3, starts
    assert len(starts["probe:one-slot"]) <= 2 < len(starts["probe:slow"]), starts
    missed = registry.get_sample_value("m3mon_job_runs_total", {"task": "probe:one-slot", "result": "missed"})
    assert missed is not None and missed >= 2
    assert registry.get_sample_value("m3mon_job_runs_total", {"task": "probe:slow", "result": "missed"}) == 0
