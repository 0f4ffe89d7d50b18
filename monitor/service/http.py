"""The service's HTTP surface.

=================  ======================================================================
``/metrics``       the exporter (OpenMetrics with exemplars when the scraper asks for it)
``/alertmanager``  Alertmanager webhooks (POST) -> incidents
``/v1/traces``     OTLP/HTTP trace export (POST) -> vLLM request spans
``/-/healthy``     200 while the process answers (``/healthz`` is the same)
``/-/ready``       200 when ready, else 503 with the reasons (:mod:`monitor.service.readiness`)
``/-/reload``      POST or PUT: reload the configuration; 200, or 500 with the error (old config kept)
``/runbooks/``     every alert's runbook, ``/runbooks/<AlertName>.md`` (:mod:`monitor.service.runbooks`)
=================  ======================================================================

With a web config that has ``basic_auth_users``, every path (``/-/healthy`` included, as with
the exporter-toolkit) needs credentials: :class:`monitor.web.auth.AuthMiddleware` answers 401
before any route runs.
"""

from __future__ import annotations

from typing import Protocol

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from monitor.exporter import Exporter
from monitor.service.jobs import Jobs
from monitor.service.metrics import receiver_of
from monitor.service.readiness import Readiness
from monitor.service.receivers import Receivers
from monitor.service.runbooks import PREFIX as RUNBOOKS
from monitor.service.runbooks import RunbookPages
from monitor.web.auth import AuthMiddleware, BasicAuth


class Control(Protocol):
    """What the HTTP surface asks of the running service."""

    def readiness(self) -> Readiness: ...

    async def reload(self) -> str | None:
        """Reload the configuration; None on success, else why it was refused."""
        ...

    def current_auth(self) -> BasicAuth | None: ...

    @property
    def source(self) -> str:
        """The configuration file the service runs from (named in the runbooks' banner)."""
        ...


def make_app(exporter: Exporter, jobs: Jobs, control: Control) -> Starlette:
    receivers = Receivers(exporter, jobs)
    runbooks = RunbookPages(control.source)

    async def metrics(request: Request) -> Response:
        body, content_type = exporter.render_for(request.headers.get("accept", ""))
        return Response(body, media_type=content_type)

    async def healthy(_: Request) -> Response:
        return PlainTextResponse("m3mon is Healthy.\n")

    async def ready(_: Request) -> Response:
        verdict = control.readiness()
        return JSONResponse(verdict.body(), status_code=200 if verdict.ready else 503)

    async def reload(_: Request) -> Response:
        error = await control.reload()
        if error is None:
            return JSONResponse({"status": "reloaded"})
        return JSONResponse({"status": "failed", "error": error}, status_code=500)

    def rejected(path: str) -> None:
        exporter.service.reject(receiver_of(path), "unauthorized")

    return Starlette(
        routes=[
            Route("/metrics", metrics),
            Route("/-/healthy", healthy, methods=["GET", "HEAD"]),
            Route("/healthz", healthy, methods=["GET", "HEAD"]),
            Route("/-/ready", ready, methods=["GET", "HEAD"]),
            Route("/-/reload", reload, methods=["POST", "PUT"]),
            Route("/alertmanager", receivers.alertmanager, methods=["POST"]),
            Route("/v1/traces", receivers.traces, methods=["POST"]),
            Route(f"{RUNBOOKS}/", runbooks.index, methods=["GET", "HEAD"]),
            Route(f"{RUNBOOKS}/{{name}}", runbooks.page, methods=["GET", "HEAD"]),
        ],
        middleware=[Middleware(AuthMiddleware, auth=control.current_auth, rejected=rejected)],
    )
