"""The simulator's Starlette application: vLLM's routes, API-key check, HTTP metrics and /sim admin."""

from __future__ import annotations

import gc
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from prometheus_client.exposition import choose_encoder
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from monitor.sim.config import VLLM_VERSION, SimConfig
from monitor.sim.faults import FaultError, Faults
from monitor.sim.serving import CHAT, COMPLETIONS, handle
from monitor.sim.simulator import Simulator
from monitor.sim.tokenize import handle_tokenize

GUARDED = ("/v1", "/v2", "/inference", "/cohere")
ROUTES = frozenset(
    {
        CHAT,
        COMPLETIONS,
        "/v1/models",
        "/health",
        "/ping",
        "/version",
        "/tokenize",
        "/load",
        "/metrics",
        "/sim/truth",
        "/sim/faults",
        "/sim/stats",
    }
)


class Frontdoor:
    """ASGI middleware: ``--api-key`` check on /v1 paths and the instrumentator's HTTP metrics."""

    def __init__(self, app: ASGIApp, sim: Simulator) -> None:
        self.app, self.sim = app, sim

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == DCGM_PATH:  # another process on a real node: never in vLLM's HTTP metrics
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        seen: dict[str, int] = {"status": 500, "size": 0}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = int(message["status"])
                headers = dict(message.get("headers", []))
                seen["size"] = int(headers.get(b"content-length", b"0"))
            await send(message)

        key = self.sim.config.api_key
        headers = dict(scope.get("headers", []))
        if (
            key
            and path.startswith(GUARDED)
            and headers.get(b"authorization", b"").decode() != f"Bearer {key}"
        ):
            await JSONResponse({"error": "Unauthorized"}, 401)(scope, receive, send_wrapper)
        else:
            counted = path in (CHAT, COMPLETIONS)
            self.sim.in_flight += counted
            try:
                await self.app(scope, receive, send_wrapper)
            finally:
                self.sim.in_flight -= counted
        handler = path.rstrip("/") if path.rstrip("/") in ROUTES else "none"
        req_size = int(headers.get(b"content-length", b"0") or 0)
        self.sim.metrics.http.observe(
            handler, scope["method"], seen["status"], req_size, seen["size"], time.perf_counter() - start
        )


def build_app(sim: Simulator) -> Starlette:
    """The ASGI app serving ``sim``; the engine starts and stops with the app's lifespan."""

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await sim.start()
        try:
            yield
        finally:
            await sim.stop()

    async def chat(request: Request) -> Response:
        return await handle(sim, request, CHAT)

    async def completions(request: Request) -> Response:
        return await handle(sim, request, COMPLETIONS)

    async def tokenize(request: Request) -> Response:
        return await handle_tokenize(sim, request)

    async def fault_switch(request: Request) -> Response:
        return await faults(sim, request)

    routes = [
        Route(CHAT, chat, methods=["POST"]),
        Route(COMPLETIONS, completions, methods=["POST"]),
        Route("/v1/models", lambda r: JSONResponse(models(sim)), methods=["GET"]),
        Route("/health", lambda r: health(sim), methods=["GET"]),
        Route("/ping", lambda r: health(sim), methods=["GET", "POST"]),
        Route("/version", lambda r: JSONResponse({"version": VLLM_VERSION}), methods=["GET"]),
        Route("/tokenize", tokenize, methods=["POST"]),
        Route("/load", lambda r: JSONResponse({"server_load": sim.in_flight}), methods=["GET"]),
        Route("/metrics", lambda r: metrics(sim, r), methods=["GET"]),
        Route("/metrics/", lambda r: metrics(sim, r), methods=["GET"]),
        Route("/sim/truth", lambda r: JSONResponse(sim.truth()), methods=["GET"]),
        Route("/sim/stats", lambda r: stats(sim, r), methods=["GET"]),
        Route("/sim/faults", fault_switch, methods=["GET", "POST", "DELETE"]),
    ]
    if sim.dcgm is not None:
        routes.append(Route(DCGM_PATH, lambda r: dcgm_page(sim), methods=["GET"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(Frontdoor, sim=sim)
    return app


#: Where ``--dcgm-gpus N`` serves the simulated node's dcgm-exporter page (same port as the API).
DCGM_PATH = "/dcgm/metrics"


def dcgm_page(sim: Simulator) -> Response:
    assert sim.dcgm is not None
    return Response(sim.dcgm.render(), headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


def tune_gc() -> None:
    """Garbage-collector settings for a process that only serves the simulator (``m3mon sim``).

    Startup objects (modules, the app, the metric registry) are frozen out of the collector's
    sight, as vLLM does after startup, and young collections run every 20 000 allocations
    instead of 700. Streams allocate many short-lived objects and no cycles, so the default
    thresholds only bought pauses: a 1024-stream run saw 3-7 ms young and ~70 ms full
    collections, each stalling every stream (``bench/sim.py``). Not for shared processes.
    """
    gc.freeze()
    gc.set_threshold(20_000, 20, 100)


def create_app(config: SimConfig | None = None) -> Starlette:
    """A fresh simulator and its app (for ``uvicorn --factory`` style use)."""
    return build_app(Simulator(config))


def health(sim: Simulator) -> Response:
    if sim.loading or sim.faults.dead:
        return Response(status_code=503)
    return Response(status_code=200)


def models(sim: Simulator) -> dict[str, Any]:
    model = sim.faults.wrong_model or sim.config.model
    created = int(sim.metrics.start_time)
    perm = {
        "id": f"modelperm-{sim.config.seed:032x}",
        "object": "model_permission",
        "created": created,
        "allow_create_engine": False,
        "allow_sampling": True,
        "allow_logprobs": True,
        "allow_search_indices": False,
        "allow_view": True,
        "allow_fine_tuning": False,
        "organization": "*",
        "group": None,
        "is_blocking": False,
    }
    card = {
        "id": model,
        "object": "model",
        "created": created,
        "owned_by": "vllm",
        "root": model,
        "parent": None,
        "max_model_len": sim.config.max_model_len,
        "permission": [perm],
    }
    return {"object": "list", "data": [card]}


def metrics(sim: Simulator, request: Request) -> Response:
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    return Response(encoder(sim.metrics.registry), headers={"Content-Type": content_type})


def stats(sim: Simulator, request: Request) -> Response:
    body = sim.stats()
    if request.query_params.get("reset"):
        sim.lag.clear()
    return JSONResponse(body)


async def faults(sim: Simulator, request: Request) -> Response:
    if request.method == "DELETE":
        sim.faults = Faults()
    elif request.method == "POST":
        try:
            update = json.loads(await request.body() or b"{}")
            if not isinstance(update, dict):
                raise FaultError("faults: expected a JSON object of fault keys")
            sim.update_faults(update)
        except (json.JSONDecodeError, FaultError) as exc:
            return JSONResponse(
                {"error": {"message": str(exc), "type": "BadRequestError", "param": None, "code": 400}}, 400
            )
    return JSONResponse({"faults": sim.faults.model_dump(), "active": sim.faults.active()})
