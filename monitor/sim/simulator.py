"""One simulated vLLM server: configuration, faults, engine, metrics, ground truth and tracing.

The HTTP layer (:mod:`monitor.sim.app`) is a thin shell over this object; tests reach it through
:class:`monitor.sim.harness.SimHandle.sim` for ground truth and faults.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from typing import Any

from starlette.responses import Response

from monitor.sim.config import SimConfig
from monitor.sim.dcgm import DcgmSurface, Load
from monitor.sim.engine import Engine
from monitor.sim.faults import ACTION_KEYS, FaultError, Faults
from monitor.sim.metrics import SimMetrics
from monitor.sim.protocol import Parsed
from monitor.sim.request import SimRequest
from monitor.sim.shapes import error
from monitor.sim.tracing import RequestTracer

TRUTH_KEEP = 100_000
LAG_INTERVAL = 0.005


class Simulator:
    """State of one simulated server; create it inside the event loop that will serve it."""

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.faults: Faults = self.config.faults
        self.rng = random.Random(self.config.seed + 1)
        self.metrics = SimMetrics(self.config)
        self.engine = Engine(self.config, lambda: self.faults, lambda: self.metrics, self._on_finish)
        self.requests: deque[SimRequest] = deque(maxlen=TRUTH_KEEP)
        self.wall_offset = time.time() - time.monotonic()
        self.ready_at = time.monotonic() + self.config.startup_delay
        self.restarts = 0
        self.in_flight = 0
        self.lag: deque[float] = deque(maxlen=20_000)
        self.tracer: RequestTracer | None = None
        if self.config.otlp_traces_endpoint or self.config.span_exporter is not None:
            c = self.config
            self.tracer = RequestTracer(
                c.otlp_traces_endpoint, c.span_exporter, c.tenant_span_attributes, c.service_name
            )
        self._tasks: list[asyncio.Task[None]] = []
        self.dcgm: DcgmSurface | None = None
        if self.config.dcgm_gpus > 0:
            cfg = self.config
            self.dcgm = DcgmSurface(cfg.dcgm_gpus, cfg.seed, cfg.gpu_memory_utilization, self.gpu_load,
                                    lambda: self.faults)  # fmt: skip

    def gpu_load(self) -> Load:
        """What drives the DCGM surface: running requests and KV-pool use."""
        return Load(len(self.engine.running), self.config.max_num_seqs, self.engine.pool.usage())

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the engine loop and the event-loop lag probe (call from the serving loop)."""
        self._tasks = [asyncio.create_task(self.engine.run()), asyncio.create_task(self._measure_lag())]

    async def stop(self) -> None:
        """Stop background tasks, abort what is in flight and flush spans."""
        self.engine.abort_all()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.tracer is not None:
            self.tracer.shutdown()

    def restart(self) -> None:
        """Simulate a server restart: in-flight requests die, caches and counters start over."""
        self.engine.abort_all()
        self.engine.pool.clear_cache()
        self.metrics = SimMetrics(self.config)
        self.ready_at = time.monotonic() + self.config.startup_delay
        self.restarts += 1

    @property
    def loading(self) -> bool:
        return time.monotonic() < self.ready_at

    async def _measure_lag(self) -> None:
        while True:
            expected = time.monotonic() + LAG_INTERVAL
            await asyncio.sleep(LAG_INTERVAL)
            self.lag.append(max(0.0, time.monotonic() - expected))

    # --- requests --------------------------------------------------------------------------

    def refusal(self, faults: Faults) -> Response | None:
        """The error a completion gets before reaching the engine (loading, dead, ...), if any."""
        if self.loading:
            return error(503, "The model is still loading.", "ServiceUnavailableError")
        if faults.dead:
            return error(
                500,
                "EngineCore encountered an issue. See stack trace for the root cause.",
                "InternalServerError",
            )
        if faults.health_ok_completions_fail:
            return error(
                500, "Injected fault: the engine failed to process the request.", "InternalServerError"
            )
        return None

    def submit(self, req: SimRequest) -> None:
        """Hand ``req`` to the engine and keep it for ``/sim/truth``."""
        self.engine.submit(req)
        self.requests.append(req)

    def _on_finish(self, req: SimRequest) -> None:
        if self.tracer is not None:
            self.tracer.record(req, self.wall_offset)

    def count_parser(self, endpoint: str, streaming: bool, tool_call: bool, parsed: Parsed) -> None:
        """``vllm:tool_call_parser_invocations_total`` (the parser runs when tools are offered)."""
        if endpoint != "/v1/chat/completions" or not parsed.ask.tools or parsed.ask.tool_choice == "none":
            return
        self.metrics.tool_parser.labels(
            self.config.model,
            "streaming" if streaming else "non_streaming",
            "tool_call" if tool_call else "no_tool_call",
            "chat_completions",
        ).inc()

    # --- admin -----------------------------------------------------------------------------

    def update_faults(self, update: dict[str, Any]) -> Faults:
        """Merge ``update`` into the active faults; ``{"restart": true}`` restarts (raises FaultError)."""
        actions = {k: update[k] for k in ACTION_KEYS if k in update}
        rest = {k: v for k, v in update.items() if k not in ACTION_KEYS}
        new = self.faults.merged(rest)
        if actions and actions.get("restart") not in (True, False):
            raise FaultError("faults: restart must be true or false")
        self.faults = new
        if actions.get("restart"):
            self.restart()
        return new

    def truth(self) -> dict[str, Any]:
        """Ground truth of every request kept (``GET /sim/truth``)."""
        return {
            "clock": {"mono_now": time.monotonic(), "wall_offset": self.wall_offset},
            "restarts": self.restarts,
            "requests": [r.truth(self.wall_offset) for r in list(self.requests)],
        }

    def stats(self) -> dict[str, Any]:
        """Engine and event-loop statistics (``GET /sim/stats``)."""
        lag = sorted(self.lag)

        def q(p: float) -> float | None:
            return lag[min(len(lag) - 1, int(p * len(lag)))] if lag else None

        return {
            "running": len(self.engine.running),
            "waiting": len(self.engine.waiting),
            "in_flight": self.in_flight,
            "steps": self.engine.steps,
            "kv_usage": self.engine.pool.usage(),
            "loop_lag": {"samples": len(lag), "p50": q(0.5), "p99": q(0.99), "max": lag[-1] if lag else None},
        }
