"""What ``m3mon run`` schedules, and how each run is tracked, counted and stopped.

:func:`plan` adds one APScheduler job per task (its id is the ``task`` label of the job metrics):
``scrape:<endpoint>``, ``health:<endpoint>``, ``probe:<class>``, ``evaluate``, ``prune`` and
``report``. :class:`Tracked` wraps each job: a job never raises into the scheduler, every run is
counted as success, failure or skipped with the time of the last success, its CPU is counted by
kind (:mod:`monitor.service.cpu`), blocking jobs run in a worker thread, and on shutdown running
jobs get a grace period before only they are cancelled. A class's probe rounds may overlap
(:func:`rounds_in_flight`), so a slow endpoint is probed at its configured rate; a run that
cannot start because its earlier runs hold every slot is counted (``result="missed"``) and logged.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_SUBMITTED, JobSubmissionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from monitor import conventions as cv
from monitor.model import RequestClass
from monitor.service.cpu import kind_of
from monitor.service.jobs import SKIPPED, Jobs
from monitor.service.metrics import ServiceMetrics

log = logging.getLogger(__name__)

PRUNE_EVERY = 3600.0
#: How often each class's bottleneck verdict is computed from the store and published.
ASSESS_EVERY = 15.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
HEALTH_EVERY = 15.0
#: Every job's defaults. A run that starts late still runs (``misfire_grace_time=None``): with
#: APScheduler's default grace of 1 s, a busy event loop at start-up (or a reload that keeps a
#: next-run time now past) silently skipped the run, and a class probed hourly went unprobed for
#: an hour. ``coalesce`` makes several missed runs one; ``max_instances=1`` never overlaps a job.
JOB_DEFAULTS: dict[str, Any] = {"coalesce": True, "max_instances": 1, "misfire_grace_time": None}
#: Probe rounds of one class in flight at once, at most (:func:`rounds_in_flight`).
MAX_ROUNDS = 8


def new_scheduler(metrics: ServiceMetrics) -> AsyncIOScheduler:
    """The scheduler ``m3mon run`` plans its jobs on (UTC, :data:`JOB_DEFAULTS`); every run's start
    delay (submission time minus its scheduled time) goes to ``m3mon_job_start_delay_seconds``."""
    scheduler = AsyncIOScheduler(timezone="UTC", job_defaults=dict(JOB_DEFAULTS))

    def submitted(event: JobSubmissionEvent) -> None:
        due = event.scheduled_run_times[-1]  # coalesced: the latest of the missed times
        metrics.started(event.job_id, (datetime.now(UTC) - due).total_seconds())

    def missed(event: JobSubmissionEvent) -> None:
        metrics.ran(event.job_id, "missed", time.time())
        log.warning("%s: a run could not start, its earlier runs still hold every slot", event.job_id)

    scheduler.add_listener(submitted, EVENT_JOB_SUBMITTED)
    scheduler.add_listener(missed, EVENT_JOB_MAX_INSTANCES)
    return scheduler


def rounds_in_flight(request_class: RequestClass) -> int:
    """How many probe rounds of a class may run at once: enough that a round whose probes wait
    out their timeout never keeps the next round from starting on time (a slow endpoint is probed
    at the configured rate, its slow answers counted, not skipped), at most :data:`MAX_ROUNDS`."""
    plan = request_class.probe
    return max(1, min(MAX_ROUNDS, math.ceil(plan.timeout / plan.interval) + 1))


def _soon(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


class Tracked:
    """Wraps scheduled jobs as tracked tasks that count their runs (see module docstring)."""

    def __init__(self, metrics: ServiceMetrics, clock: Callable[[], float] = time.time) -> None:
        self.metrics = metrics
        self.clock = clock
        self.running: set[asyncio.Task[object]] = set()

    def __call__(self, task: str, fn: Callable[..., Any], *, blocking: bool = False) -> Callable[..., Any]:
        cpu, kind = self.metrics.cpu, kind_of(task)

        async def job(*args: Any) -> None:
            current = asyncio.current_task()
            assert current is not None
            self.running.add(current)
            try:
                if blocking:
                    value = await asyncio.to_thread(cpu.call, kind, fn, *args)
                else:
                    value = await cpu.run(kind, fn(*args))
            except asyncio.CancelledError:
                log.info("job %s cancelled at shutdown", task)
            except Exception:
                log.exception("job %s failed", task)
                self.metrics.ran(task, "failure", self.clock())
            else:
                self.metrics.ran(task, "skipped" if value is SKIPPED else "success", self.clock())
            finally:
                self.running.discard(current)

        job.__name__ = getattr(fn, "__name__", "job")
        return job

    async def finish(self, grace: float) -> None:
        """Give running jobs ``grace`` seconds, then cancel those still running."""
        if not self.running:
            return
        _, late = await asyncio.wait(set(self.running), timeout=grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)


def plan(
    scheduler: AsyncIOScheduler,
    jobs: Jobs,
    tracked: Tracked,
    *,
    evaluate_every: float,
    send_reports: bool,
    keep: Mapping[str, datetime | None] | None = None,
) -> list[str]:
    """Add every job of ``jobs.model`` to ``scheduler``; returns the task ids.

    ``keep`` maps task ids to the next run time they had before a reload, so re-planning does
    not make every probe and scrape run at once.
    """
    model, keep = jobs.model, keep or {}
    aligned = jobs.fleet is not None  # fleet mode: scrapes and probe rounds on epoch-aligned slots

    def add(task: str, fn: Callable[..., Any], first: float, *, blocking: bool = False, **kw: Any) -> None:
        start = keep.get(task) or _soon(first)
        scheduler.add_job(tracked(task, fn, blocking=blocking), id=task, name=task, next_run_time=start, **kw)

    def add_slotted(task: str, fn: Callable[..., Any], first: float, seconds: float, **kw: Any) -> None:
        if not aligned:
            add(task, fn, first, trigger="interval", seconds=seconds, **kw)
            return
        # runs at every multiple of ``seconds`` since the epoch, the same instants on every replica
        kw.pop("jitter", None)  # a slot's probes are spread by the runner's jitter, inside the slot
        job = tracked(task, fn)
        scheduler.add_job(job, "interval", seconds=seconds, start_date=EPOCH, id=task, name=task, **kw)

    for ep in model.endpoints:
        add_slotted(f"scrape:{ep.name}", jobs.scrape, 0.5, ep.scrape_interval, args=[ep])
        add(f"health:{ep.name}", jobs.health, 0.2, trigger="interval", seconds=HEALTH_EVERY, args=[ep])
    for cls in model.classes:
        first = 1.0 + random.uniform(0, cls.probe.jitter)
        add_slotted(cv.probe_task(cls.name), jobs.probe, first, cls.probe.interval, jitter=cls.probe.jitter,
                    args=[cls.name], max_instances=rounds_in_flight(cls))  # fmt: skip
    add(
        cv.TASK_EVALUATE,
        jobs.evaluate,
        evaluate_every,
        blocking=True,
        trigger="interval",
        seconds=evaluate_every,
    )
    add(cv.TASK_ASSESS, jobs.assess, ASSESS_EVERY, blocking=True, trigger="interval", seconds=ASSESS_EVERY)
    add("prune", jobs.prune, PRUNE_EVERY, blocking=True, trigger="interval", seconds=PRUNE_EVERY)
    if send_reports and (model.report.recipients or model.report.webhook_url):
        _add_report(scheduler, jobs, tracked, keep.get("report"))
    return [job.id for job in scheduler.get_jobs()]


def _add_report(scheduler: AsyncIOScheduler, jobs: Jobs, tracked: Tracked, keep: datetime | None) -> None:
    from monitor.report.delivery import weekly_job
    from monitor.report.schedule import cron_trigger

    model = jobs.model
    trigger = cron_trigger(model.report.schedule, model.report.timezone)
    when = {"next_run_time": keep} if keep else {}  # next_run_time=None would pause the job
    job = tracked("report", weekly_job)
    scheduler.add_job(job, trigger, args=[model, jobs.store], id="report", name="report", **when)
