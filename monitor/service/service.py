"""``m3mon run``: scrapes, probes, evaluation, retention and the weekly report under APScheduler.

One asyncio loop runs the APScheduler ``AsyncIOScheduler`` and a uvicorn server with the
exporter (``/metrics``) and the Alertmanager receiver (``/alertmanager``). SIGTERM and SIGINT
stop the scheduler, let running jobs finish, flush the store buffer and close the server.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import uvicorn
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from monitor.exporter import Exporter
from monitor.model import Model
from monitor.service.http import make_app
from monitor.service.jobs import Jobs
from monitor.slo.due import STEP
from monitor.store import Store

log = logging.getLogger(__name__)

#: How often due SLO evaluations are computed (the evaluator aligns them to its own step).
EVALUATE_EVERY = 15.0
PRUNE_EVERY = 3600.0
HEALTH_EVERY = 15.0
#: Seconds running jobs get to finish on SIGTERM before they are cancelled.
SHUTDOWN_GRACE = 10.0


class Service:
    """The monitor as a long-running process."""

    def __init__(self, model: Model, *, send_reports: bool = True, evaluation_step: float = STEP) -> None:
        self.model = model
        self.store = Store(model.storage.url)
        self.store.check_schema()
        self.exporter = Exporter(model)
        self.jobs = Jobs(model, self.store, self.exporter, evaluation_step=evaluation_step)
        self.evaluate_every = min(EVALUATE_EVERY, evaluation_step)
        self.send_reports = send_reports
        self.scheduler = AsyncIOScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1})
        self.stopping = asyncio.Event()
        self.server: uvicorn.Server | None = None
        self.tracked = _Tracked()

    def _schedule(self) -> None:
        add, track = self.scheduler.add_job, self.tracked
        for ep in self.model.endpoints:
            add(track(self.jobs.scrape), "interval", seconds=ep.scrape_interval, args=[ep],
                id=f"scrape:{ep.name}", next_run_time=_soon(0.5))  # fmt: skip
            add(track(self.jobs.health), "interval", seconds=HEALTH_EVERY, args=[ep], id=f"health:{ep.name}",
                next_run_time=_soon(0.2))  # fmt: skip
        for cls in self.model.classes:
            first = _soon(1.0 + random.uniform(0, cls.probe.jitter))
            add(track(self.jobs.probe), "interval", seconds=cls.probe.interval, args=[cls.name],
                id=f"probe:{cls.name}", jitter=cls.probe.jitter, next_run_time=first)  # fmt: skip
        add(track(self.jobs.evaluate, blocking=True), "interval", seconds=self.evaluate_every, id="evaluate",
            next_run_time=_soon(self.evaluate_every))  # fmt: skip
        add(track(self.jobs.prune, blocking=True), "interval", seconds=PRUNE_EVERY, id="prune")
        if self.send_reports and (self.model.report.recipients or self.model.report.webhook_url):
            from monitor.report.delivery import weekly_job
            from monitor.report.schedule import cron_trigger

            add(track(weekly_job), cron_trigger(self.model.report.schedule, self.model.report.timezone),
                args=[self.model, self.store], id="report")  # fmt: skip

    async def serve(self, duration: float | None = None) -> None:
        """Run until SIGTERM/SIGINT (or for ``duration`` seconds), then shut down cleanly."""
        host, port = self.model.exporter_listen.rsplit(":", 1)
        app = make_app(self.exporter, self.jobs)
        config = uvicorn.Config(app, host=host, port=int(port), log_level="warning", lifespan="off")
        self.server = _QuietServer(config)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopping.set)
        await self.jobs.register_endpoints()
        self._schedule()
        self.scheduler.start()
        server_task = asyncio.create_task(self.server.serve())
        log.info("m3mon running: exporter on http://%s/metrics", self.model.exporter_listen)
        with suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), timeout=duration)
        await self.shutdown(server_task)

    async def shutdown(self, server_task: asyncio.Task[None]) -> None:
        log.info("m3mon stopping")
        self.scheduler.shutdown(wait=False)
        if self.server is not None:
            self.server.should_exit = True
        with suppress(asyncio.CancelledError):
            await server_task
        await self.tracked.finish(SHUTDOWN_GRACE)
        await self.jobs.close()
        await asyncio.to_thread(self.jobs.evaluate)
        self.store.close()


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the service owns SIGTERM/SIGINT."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _soon(seconds: float) -> object:
    from datetime import UTC, datetime, timedelta

    return datetime.now(UTC) + timedelta(seconds=seconds)


class _Tracked:
    """Runs scheduled jobs as tracked tasks: failures are logged, shutdown can wait for them.

    A job never raises into the scheduler; blocking jobs run in a worker thread. On shutdown,
    :meth:`finish` gives running jobs ``grace`` seconds, then cancels only those jobs.
    """

    def __init__(self) -> None:
        self.running: set[asyncio.Task[object]] = set()

    def __call__(self, fn: Callable[..., Any], *, blocking: bool = False) -> Callable[..., Any]:
        async def job(*args: Any) -> None:
            task = asyncio.current_task()
            assert task is not None
            self.running.add(task)
            try:
                await (asyncio.to_thread(fn, *args) if blocking else fn(*args))
            except asyncio.CancelledError:
                log.info("job %s cancelled at shutdown", name)
            except Exception:
                log.exception("job %s failed", name)
            finally:
                self.running.discard(task)

        name = getattr(fn, "__name__", "job")
        job.__name__ = name
        return job

    async def finish(self, grace: float) -> None:
        if not self.running:
            return
        _, late = await asyncio.wait(set(self.running), timeout=grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
