"""The receivers: ``POST /alertmanager`` (webhooks -> incidents) and ``POST /v1/traces`` (OTLP spans).

Both read the body through :func:`monitor.web.body.read_capped` (413 beyond the cap, without
reading the rest; 408 when it has not arrived within BODY_TIMEOUT, so a client that drips its
body holds nothing for long) and validate it whole before anything is stored: a malformed or oversized
field is a 400 naming it (:mod:`monitor.service.webhook`, :mod:`monitor.traces.validate`), an
encoding the receiver does not speak a 415. Every refusal is logged and counted in
``m3mon_receiver_rejected_total{receiver,reason}``.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from monitor import conventions as cv
from monitor.errors import StoreError
from monitor.exporter import Exporter
from monitor.service.jobs import Jobs
from monitor.service.webhook import WebhookError, parse_webhook
from monitor.traces import MAX_BODY_BYTES, OtlpError, parse_request
from monitor.traces.otlp import PROTOBUF, UnsupportedEncoding, media_type
from monitor.web.body import BodyTooLarge, read_capped

log = logging.getLogger(__name__)

#: Alertmanager webhook bodies above this size are refused (it sends at most a few hundred KB).
MAX_WEBHOOK_BYTES = 4 * 1024 * 1024
#: Seconds a whole request body may take to arrive.
BODY_TIMEOUT = 30.0


def _otlp_response(content_type: str | None) -> Response:
    """An empty ``ExportTraceServiceResponse`` in the request's encoding (full success)."""
    if media_type(content_type) == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        return Response(ExportTraceServiceResponse().SerializeToString(), media_type=PROTOBUF)
    return JSONResponse({})


class Receivers:
    """The two receiving endpoints, sharing the exporter's counters and the jobs' store writer."""

    def __init__(self, exporter: Exporter, jobs: Jobs, body_timeout: float = BODY_TIMEOUT) -> None:
        self.exporter = exporter
        self.jobs = jobs
        self.body_timeout = body_timeout

    async def _body(self, request: Request, receiver: str, limit: int) -> bytes | Response:
        """The body, or the response refusing it (413 too large, 408 too slow), counted."""
        try:
            async with asyncio.timeout(self.body_timeout):
                return await read_capped(request.stream(), limit, request.headers.get("content-length"))
        except BodyTooLarge as exc:
            self._refused(receiver, "too_large", str(exc))
            return JSONResponse({"error": str(exc)}, status_code=413)
        except TimeoutError:
            self._refused(receiver, "too_slow", f"no complete body within {self.body_timeout:g}s")
            return JSONResponse(
                {"error": f"body not received within {self.body_timeout:g}s"}, status_code=408
            )

    def _refused(self, receiver: str, reason: str, detail: str) -> None:
        self.exporter.service.reject(receiver, reason)
        log.warning("refused a request to the %s receiver (%s): %s", receiver, reason, detail[:300])

    async def alertmanager(self, request: Request) -> Response:
        body = await self._body(request, cv.RECEIVER_ALERTMANAGER, MAX_WEBHOOK_BYTES)
        if isinstance(body, Response):
            return body
        try:
            payload = parse_webhook(body)
            await self.jobs.alertmanager(payload)
        except WebhookError as exc:
            self._refused(cv.RECEIVER_ALERTMANAGER, "invalid", str(exc))
            error = f"not an Alertmanager webhook payload: {exc}"
            return JSONResponse({"error": error, "field": exc.field}, status_code=400)
        except StoreError as exc:  # incident_rows' own checks (validation should have caught it)
            self._refused(cv.RECEIVER_ALERTMANAGER, "invalid", str(exc))
            return JSONResponse({"error": f"not an Alertmanager webhook payload: {exc}"}, status_code=400)
        return JSONResponse({"status": "recorded", "alerts": len(payload["alerts"])})

    async def traces(self, request: Request) -> Response:
        """OTLP/HTTP trace export: ``llm_request`` spans are stored, other spans ignored."""
        body = await self._body(request, cv.RECEIVER_OTLP, MAX_BODY_BYTES)
        if isinstance(body, Response):
            self.exporter.traces.rejected()
            return body
        content_type = request.headers.get("content-type")
        try:
            keys = self.jobs.span_keys()
            batch = parse_request(body, content_type, request.headers.get("content-encoding"), keys)
        except OtlpError as exc:
            self.exporter.traces.rejected()
            unsupported = isinstance(exc, UnsupportedEncoding)
            self._refused(cv.RECEIVER_OTLP, "unsupported" if unsupported else "invalid", str(exc))
            return PlainTextResponse(f"{exc}\n", status_code=415 if unsupported else 400)
        await self.jobs.spans(batch.spans)
        self.exporter.traces.accepted(len(batch.spans), batch.ignored)
        return _otlp_response(content_type)
