"""The service's HTTP surface: ``/metrics`` (exporter), ``/alertmanager`` and ``/v1/traces`` (receivers),
``/healthz``."""

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
from monitor.traces import MAX_BODY_BYTES, OtlpError, parse_request
from monitor.traces.otlp import PROTOBUF, UnsupportedEncoding, media_type

log = logging.getLogger(__name__)

#: Alertmanager webhook bodies above this size are refused (it sends at most a few hundred KB).
MAX_WEBHOOK_BYTES = 4 * 1024 * 1024


class _TooLarge(Exception):
    pass


async def _read_capped(request: Request, limit: int) -> bytes:
    """The request body, or _TooLarge as soon as it exceeds ``limit`` bytes (never buffered past it)."""
    if int(request.headers.get("content-length") or 0) > limit:
        raise _TooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _otlp_response(content_type: str | None) -> Response:
    """An empty ``ExportTraceServiceResponse`` in the request's encoding (full success)."""
    if media_type(content_type) == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        return Response(ExportTraceServiceResponse().SerializeToString(), media_type=PROTOBUF)
    return JSONResponse({})


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

    async def traces(request: Request) -> Response:
        """OTLP/HTTP trace export: ``llm_request`` spans are stored, other spans ignored."""
        try:
            body = await _read_capped(request, MAX_BODY_BYTES)
        except _TooLarge:
            exporter.traces.rejected()
            return PlainTextResponse(f"OTLP body larger than {MAX_BODY_BYTES} bytes\n", status_code=413)
        content_type = request.headers.get("content-type")
        try:
            batch = parse_request(body, content_type, request.headers.get("content-encoding"))
        except OtlpError as exc:
            exporter.traces.rejected()
            log.warning("rejected an OTLP traces request: %s", exc)
            status = 415 if isinstance(exc, UnsupportedEncoding) else 400
            return PlainTextResponse(f"{exc}\n", status_code=status)
        await jobs.spans(batch.spans)
        exporter.traces.accepted(len(batch.spans), batch.ignored)
        return _otlp_response(content_type)

    return Starlette(
        routes=[
            Route("/metrics", metrics),
            Route("/healthz", healthz),
            Route("/alertmanager", alertmanager, methods=["POST"]),
            Route("/v1/traces", traces, methods=["POST"]),
        ]
    )
