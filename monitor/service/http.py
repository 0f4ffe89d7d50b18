"""The service's HTTP surface: ``/metrics`` (exporter), ``/alertmanager`` (receiver), ``/healthz``."""

from __future__ import annotations

import json
import logging

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from monitor.errors import StoreError
from monitor.exporter import Exporter
from monitor.service.jobs import Jobs

log = logging.getLogger(__name__)

#: Alertmanager webhook bodies above this size are refused (it sends at most a few hundred KB).
MAX_WEBHOOK_BYTES = 4 * 1024 * 1024


def make_app(exporter: Exporter, jobs: Jobs) -> Starlette:
    async def metrics(_: Request) -> Response:
        return Response(exporter.render(), media_type=CONTENT_TYPE_LATEST)

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def alertmanager(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_WEBHOOK_BYTES:
            return JSONResponse({"error": "payload too large"}, status_code=413)
        try:
            payload = json.loads(body)
            if not isinstance(payload, dict):
                raise StoreError("alertmanager webhook: expected a JSON object")
            await jobs.alertmanager(payload)
        except (ValueError, StoreError, AttributeError, TypeError) as exc:
            log.warning("rejected an alertmanager webhook: %s", exc)
            return JSONResponse({"error": f"not an Alertmanager webhook payload: {exc}"}, status_code=400)
        return JSONResponse({"status": "recorded", "alerts": len(payload.get("alerts", []))})

    return Starlette(
        routes=[
            Route("/metrics", metrics),
            Route("/healthz", healthz),
            Route("/alertmanager", alertmanager, methods=["POST"]),
        ]
    )
