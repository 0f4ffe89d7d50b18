"""``m3mon run``: scrapes, probes, evaluation, retention and the weekly report under APScheduler.

One asyncio loop runs the APScheduler ``AsyncIOScheduler`` and a uvicorn server with the HTTP
surface of :mod:`monitor.service.http`. The web config (exporter-toolkit format) adds TLS and
basic auth; without one the service refuses to listen beyond loopback and says at start that it
serves plain HTTP on loopback only. SIGHUP reloads the configuration (:mod:`monitor.service.reload`);
SIGTERM and SIGINT stop the scheduler, let running jobs finish, flush the store buffer and the
OTLP GenAI client metrics, and close the server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import datetime

import uvicorn

from monitor.errors import ServiceError, StoreError
from monitor.exporter import Exporter
from monitor.fleet.role import FleetMetrics, FleetRole
from monitor.model import Endpoint, Model
from monitor.probes.confirm import Confirmations
from monitor.service import confirm_rounds
from monitor.service import reload as reloading
from monitor.service.http import make_app
from monitor.service.jobs import Jobs
from monitor.service.logs import LIFECYCLE
from monitor.service.readiness import Readiness, readiness
from monitor.service.repeats import REPEATS
from monitor.service.runbooks import PREFIX as RUNBOOKS
from monitor.service.schedule import Tracked, new_scheduler, plan
from monitor.slo.due import STEP
from monitor.store import Store, failures
from monitor.store.engine import display_url
from monitor.web.auth import BasicAuth
from monitor.web.config import check_exposure

log = logging.getLogger(__name__)
#: The start and stop lines (shown at the default log level: monitor.service.logs).
lifecycle = logging.getLogger(LIFECYCLE)

#: How often due SLO evaluations are computed (the evaluator aligns them to its own step).
EVALUATE_EVERY = 15.0
#: Seconds running jobs get to finish on SIGTERM before they are cancelled.
SHUTDOWN_GRACE = 10.0


class Service:
    """The monitor as a long-running process."""

    def __init__(
        self,
        model: Model,
        *,
        send_reports: bool = True,
        evaluation_step: float = STEP,
        web_config: str | None = None,
        fleet: FleetRole | None = None,
        listen: str | None = None,
    ) -> None:
        self.fleet = fleet
        self.listen = listen  # --listen: replaces exporter.listen, also on reload
        model = self.restrict(model)
        self.model = model
        self.web_flag = web_config
        self.web = reloading.load_web(model, web_config)
        check_exposure(model.exporter_listen, self.web, model.source)  # before touching anything
        self.auth = BasicAuth(dict(self.web.users)) if self.web and self.web.users else None
        self.store = Store(model.storage.url)
        self._check_store()
        self.exporter = Exporter(model)
        self.jobs = Jobs(model, self.store, self.exporter, evaluation_step=evaluation_step)
        if fleet is not None:
            fleet.metrics = FleetMetrics(self.exporter.registry)
            fleet.metrics.own(fleet.shard, model)
            self.jobs.fleet = fleet
            log.info("fleet: shard %s, replica %s, %d endpoint(s) owned", fleet.shard, fleet.replica,
                     len(model.endpoints))  # fmt: skip
        self.evaluate_every = min(EVALUATE_EVERY, evaluation_step)
        self.send_reports = send_reports
        self.scheduler = new_scheduler(self.exporter.service)
        self.stopping = asyncio.Event()
        self.stopped_by: signal.Signals | None = None  # the signal that asked the service to stop
        self.server: uvicorn.Server | None = None
        self.tracked = Tracked(self.exporter.service)
        self._reloads: set[asyncio.Task[str | None]] = set()
        self._reload_lock = asyncio.Lock()
        self.confirmations = Confirmations()
        if fleet is None:  # fleet mode: a slot's probes are one replica's (confirm_rounds)
            self.jobs.on_refused = self._confirm

    def _confirm(self, endpoint: Endpoint) -> None:
        confirm_rounds.schedule(self.scheduler, self.tracked, self.jobs.confirm, self.confirmations, endpoint,
                                time.time())  # fmt: skip

    def _check_store(self) -> None:
        """Refuse a store that answers without the m3mon tables or refuses the credentials; start
        without one that does not answer at all: writes are spooled (the writer's outage path)
        until it does, and ``/-/ready`` names it meanwhile."""
        try:
            self.store.check_schema()
        except StoreError:
            raise
        except Exception as exc:
            if not failures.cannot_connect(exc) or failures.refused(exc):
                raise
            log.warning("the store is away at start (%s: %s): serving, writes are spooled until it answers",
                        display_url(self.store.url), failures.describe(exc))  # fmt: skip

    def restrict(self, model: Model) -> Model:
        """The part of ``model`` this replica watches: its shard's endpoints in fleet mode."""
        if self.listen:
            model = dataclasses.replace(model, exporter_listen=self.listen)
        return self.fleet.shard.restrict(model) if self.fleet is not None else model

    # --- what the HTTP surface asks (monitor.service.http.Control) ------------------------------

    def readiness(self) -> Readiness:
        return readiness(
            scheduler_running=self.scheduler.running,
            backlog=self.jobs.writer.backlog,
            max_backlog=self.model.storage.buffer_max_items,
            store_away=display_url(self.store.url) if self.jobs.writer.database_away else None,
            last_evaluation=self.jobs.last_evaluation,
            now=self.jobs.clock(),
            step=self.jobs.evaluation_step,
        )

    async def reload(self) -> str | None:
        async with self._reload_lock:
            return await reloading.reload(self)

    def current_auth(self) -> BasicAuth | None:
        return self.auth

    @property
    def source(self) -> str:
        return self.model.source

    def set_users(self, users: Mapping[str, str]) -> None:
        if not users:
            self.auth = None
        elif self.auth is None:
            self.auth = BasicAuth(users)
        else:
            self.auth.replace(users)

    # --- scheduling ------------------------------------------------------------------------------

    def plan(self, keep: Mapping[str, datetime | None] | None = None) -> None:
        tasks = plan(self.scheduler, self.jobs, self.tracked, evaluate_every=self.evaluate_every,
                     send_reports=self.send_reports, keep=keep)  # fmt: skip
        self.exporter.service.plan(tasks)

    def _schedule(self) -> None:
        self.plan()

    # --- running ---------------------------------------------------------------------------------

    def _server(self) -> uvicorn.Server:
        host, port = self.model.exporter_listen.rsplit(":", 1)
        tls = self.web.tls if self.web else None
        config = uvicorn.Config(make_app(self.exporter, self.jobs, self), host=host, port=int(port),
                                log_level="warning", log_config=None, access_log=False, lifespan="off",
                                **(tls.uvicorn_kwargs() if tls else {}))  # fmt: skip
        config.load()
        if tls is not None and config.ssl is not None:
            tls.restrict(config.ssl)
        return _QuietServer(config)

    def _listen_socket(self) -> socket.socket:
        host, port = self.model.exporter_listen.rsplit(":", 1)
        try:
            return socket.create_server((host, int(port)))
        except OSError as exc:
            raise ServiceError(
                f"cannot listen on {self.model.exporter_listen} (exporter.listen): "
                f"{os.strerror(exc.errno) if exc.errno else exc}"
            ) from None

    def _announce(self) -> None:
        scheme = "https" if self.web and self.web.tls else "http"
        if self.web is None:
            log.warning("no web config (--web.config.file): serving %s without TLS or authentication, on "
                        "loopback only", self.model.exporter_listen)  # fmt: skip
        else:
            log.info("web config %s: TLS %s, basic auth %s", self.web.path, "on" if self.web.tls else "off",
                     f"for {len(self.web.users)} user(s)" if self.web.users else "off")  # fmt: skip
        if self.model.credentials is not None and not (self.web and self.web.users):
            log.warning("exporter.credentials is set but no web config checks basic-auth users: the "
                        "credentials clients send are not verified")  # fmt: skip
        for e in self.model.keys_unset():
            log.warning("%s", e.key_unset())
        base = f"{scheme}://{self.model.exporter_listen}"
        lifecycle.info("m3mon running: exporter on %s/metrics, OTLP trace receiver on %s/v1/traces, "
                       "Alertmanager receiver on %s/alertmanager, runbooks on %s%s/; config %s; store %s",
                       base, base, base, base, RUNBOOKS, os.path.abspath(self.model.source),
                       display_url(self.store.url))  # fmt: skip

    def _on_stop_signal(self, sig: signal.Signals) -> None:
        self.stopped_by = sig
        self.stopping.set()

    def _on_sighup(self) -> None:
        task = asyncio.create_task(self.reload())
        self._reloads.add(task)
        task.add_done_callback(self._reloads.discard)

    async def serve(self, duration: float | None = None) -> None:
        """Run until SIGTERM/SIGINT (or for ``duration`` seconds), then shut down cleanly.

        The listening socket is bound first, so a taken address fails before anything starts
        (:class:`~monitor.errors.ServiceError`, one line), not inside the HTTP server."""
        sock = self._listen_socket()
        self.server = self._server()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_stop_signal, sig)
        with suppress(NotImplementedError, RuntimeError, AttributeError):
            loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
        uninstall = self.exporter.service.cpu.install(loop)
        started = time.monotonic()
        try:
            await self._run(sock, duration)
        except BaseException as exc:
            why = f"on an error: {exc}" if isinstance(exc, Exception) else f"({type(exc).__name__})"
            lifecycle.error("m3mon stopped %s, after %.0f s", why, time.monotonic() - started)
            raise
        finally:
            uninstall()
        why = (self.stopped_by.name if self.stopped_by is not None
               else "asked to stop" if duration is None or self.stopping.is_set()
               else f"--duration {duration:g} s elapsed")  # fmt: skip
        lifecycle.info("m3mon stopped (%s) after %.0f s", why, time.monotonic() - started)

    async def _run(self, sock: socket.socket, duration: float | None) -> None:
        assert self.server is not None
        await self.jobs.register_endpoints()
        self.plan()
        self.scheduler.start()
        server_task = asyncio.create_task(self.server.serve(sockets=[sock]))
        self._announce()
        sweeper = asyncio.create_task(_sweep_repeats())
        ticker = asyncio.create_task(self.exporter.service.loop_lag.watch())
        with suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), timeout=duration)
        sweeper.cancel()
        ticker.cancel()
        await self.shutdown(server_task)
        REPEATS.flush()

    async def shutdown(self, server_task: asyncio.Task[None]) -> None:
        log.info("m3mon stopping")
        self.scheduler.shutdown(wait=False)
        if self.server is not None:
            self.server.should_exit = True
        with suppress(asyncio.CancelledError):
            await server_task
        await asyncio.gather(*self._reloads, return_exceptions=True)
        await self.tracked.finish(SHUTDOWN_GRACE)
        await self.jobs.close()
        await asyncio.to_thread(self.jobs.evaluate)
        if self.exporter.genai is not None:  # push the GenAI client metrics recorded since the last export
            await asyncio.to_thread(self.exporter.genai.shutdown)
        if self.fleet is not None:
            self.fleet.lock.release()
        self.store.close()


async def _sweep_repeats(every: float = 1.0) -> None:
    """Say when a repeated warning stopped (:meth:`monitor.service.repeats.RepeatFilter.sweep`)."""
    while True:
        await asyncio.sleep(every)
        REPEATS.sweep()


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the service owns SIGTERM, SIGINT and SIGHUP."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
