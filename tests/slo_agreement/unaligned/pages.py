"""What an observer reads at instant t: a pool's vLLM page, a monitor replica's exporter page.

A pool's page holds every request it finished at or before t since its last restart (counters
start over at a restart; ``process_start_time_seconds`` moves), in vLLM's own text format
(``request_success_total`` by ``finished_reason``, the e2e histogram with vLLM's edges). A
monitor replica's page is its real exporter (:class:`monitor.probes.metrics.ProbeMetrics` and the
real :class:`monitor.maintenance.metrics.MaintenanceCollector`) after observing the runs it
completed since its last restart, as the replica's own process would render it at t, with its
``process_start_time_seconds`` as the real exporter's process collector publishes it. In a
real-traffic world it has also counted every span it received since its last restart, judged by
the real :class:`monitor.slo.traffic.TrafficJudge` into the real
:class:`monitor.traces.metrics.TrafficMetrics` (every series created at 0 at start, as the
exporter does).
"""

from __future__ import annotations

import bisect
import math

from prometheus_client import CollectorRegistry, generate_latest

from monitor.exporter import traffic_series
from monitor.maintenance.metrics import MaintenanceCollector
from monitor.model import Model
from monitor.probes.metrics import ProbeMetrics
from monitor.probes.result import ProbeResult, Timings, Usage
from monitor.slo.probe_goodput import judge
from monitor.slo.traffic import Judged, TrafficJudge
from monitor.traces.metrics import TrafficMetrics
from monitor.traces.span import ServerSpan
from tests.slo_agreement.unaligned.world import E2E_EDGES, THRESHOLD, Run, World

MODEL_ID = "MiniMaxAI/MiniMax-M3"
T0 = 1_767_571_200.0  # the world's start for the store (a Monday, a whole hour)
_BASE = f'engine="0",model_name="{MODEL_ID}"'


def endpoint(world: World, pool: str) -> str:
    return f"{world.name}-{pool}"


def _since_restart(world: World, pool: str, t: float) -> float:
    return max((r for r in world.restarts[pool] if r <= t), default=-30.0)


def _le(edge: float) -> str:
    return "+Inf" if math.isinf(edge) else repr(float(edge))


class ServerPages:
    """Every pool's page at any instant, from the world's requests (prefix counts by bisection)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.times = {p: [t for t, _ in world.requests[p]] for p in world.pools}
        self.bad = {p: [0] for p in world.pools}
        for p in world.pools:
            for _, bad in world.requests[p]:
                self.bad[p].append(self.bad[p][-1] + bad)

    def counts(self, pool: str, after: float, upto: float) -> tuple[int, int]:
        """(requests, bad) finished in ``(after, upto]``."""
        lo, hi = bisect.bisect_right(self.times[pool], after), bisect.bisect_right(self.times[pool], upto)
        return hi - lo, self.bad[pool][hi] - self.bad[pool][lo]

    def text(self, pool: str, t: float) -> str:
        started = _since_restart(self.world, pool, t)
        n, bad = self.counts(pool, started, t)
        lines = [
            "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {T0 + started!r}",
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
            f'vllm:request_success_total{{{_BASE},finished_reason="stop"}} {float(n - bad)!r}',
            f'vllm:request_success_total{{{_BASE},finished_reason="error"}} {float(bad)!r}',
        ]
        if self.world.sli == "e2e":
            lines += self._e2e(n, bad)
        return "\n".join(lines) + "\n"

    def _e2e(self, n: int, bad: int) -> list[str]:
        """Good requests took half the threshold, bad ones twice it."""
        name, threshold = "vllm:e2e_request_latency_seconds", THRESHOLD["e2e"]
        out = [f"# HELP {name} Histogram of e2e request latency in seconds.", f"# TYPE {name} histogram"]
        for edge in (*E2E_EDGES, math.inf):
            below = (n - bad if threshold / 2 <= edge else 0) + (bad if 2 * threshold <= edge else 0)
            out.append(
                f'{name}_bucket{{engine="0",le="{_le(edge)}",model_name="{MODEL_ID}"}} {float(below)!r}'
            )
        out.append(f"{name}_count{{{_BASE}}} {float(n)!r}")
        out.append(f"{name}_sum{{{_BASE}}} {(n - bad) * threshold / 2 + bad * threshold * 2!r}")
        return out


def probe_result(world: World, run: Run) -> ProbeResult:
    """The result a replica's prober reports for ``run``, completed at its end."""
    failed = world.sli == "availability" and run.bad
    ttft = (2 * THRESHOLD["ttft"] if run.bad else THRESHOLD["ttft"] / 4) if not failed else None
    return ProbeResult(
        endpoint=endpoint(world, world.pools[0]),
        request_class=world.name,
        kind="chat",
        started_at=T0 + run.start,
        reason="http_status" if failed else None,
        timings=Timings(ttft=ttft, ttft_answer=ttft, e2e=run.end - run.start),
        usage=Usage() if failed else Usage(prompt_tokens=12, completion_tokens=3),
        model=None if failed else MODEL_ID,
        finish_reason=None if failed else "stop",
        status_code=503 if failed else 200,
        detail="scenario" if failed else "",
    )


def server_span(world: World, i: int) -> ServerSpan:
    """The span of real request ``world.runs[i]`` (a real-traffic world): 3 tokens in 1 s, or an
    error (a failed request: bad whatever the class's limits)."""
    run = world.runs[i]
    return ServerSpan(
        trace_id=f"{world.seed:08x}{i:024x}",
        span_id=f"{i:016x}",
        name="llm_request",
        start=T0 + run.start - 1.0,
        end=T0 + run.start,
        ttft=None if run.bad else 0.2,
        e2e=1.0,
        prompt_tokens=12,
        completion_tokens=None if run.bad else 3,
        service_name=endpoint(world, run.pool),
        finish_reason=None if run.bad else "stop",
        error_type="EngineDeadError" if run.bad else None,
    )


class MonitorPages:
    """A monitor replica's exporter page at increasing instants (its probe metrics and the
    maintenance boundaries it publishes), restricted to the metric names the rules read."""

    def __init__(self, world: World, model: Model, replica: str, wanted: set[str]) -> None:
        self.world, self.model, self.wanted = world, model, wanted
        self.runs = [(i, r) for i, r in enumerate(world.runs) if r.replica == replica]
        self.restarts = sorted(world.monitor_restarts[replica])
        self.now = 0.0
        self.started = -30.0
        self._fresh()

    def _fresh(self) -> None:
        """A new process: its counters start at 0 (every series created at start)."""
        self.registry = CollectorRegistry()
        self.metrics = ProbeMetrics.for_model(self.registry, self.model, judge(self.model))
        self.traffic = TrafficMetrics(self.registry)
        self.traffic.prepare(traffic_series(self.model))
        self.judge = TrafficJudge(self.model)
        self.boundaries = CollectorRegistry()  # a collector without describe(): not restrictable
        self.boundaries.register(MaintenanceCollector(lambda: self.model.maintenance, lambda: T0 + self.now))
        self.next = next((k for k, (_, r) in enumerate(self.runs) if r.end > self.started), len(self.runs))

    def _observe(self, i: int, run: Run) -> None:
        if self.world.source != "traffic":
            self.metrics.observe(probe_result(self.world, run))
            return
        found = self.judge.judge(server_span(self.world, i))
        assert isinstance(found, Judged), found
        self.traffic.observe([(found.endpoint, found.request_class, found.labels)], {})

    def text(self, t: float) -> str:
        assert t >= self.now, "pages are read in time order"
        started = max((r for r in self.restarts if r <= t), default=-30.0)
        if started != self.started:
            self.started = started
            self._fresh()
        while self.next < len(self.runs) and self.runs[self.next][1].end <= t:
            self._observe(*self.runs[self.next])
            self.next += 1
        self.now = t
        probes = generate_latest(self.registry.restricted_registry(self.wanted)).decode()
        started = (
            f"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {T0 + self.started!r}\n"
        )
        return probes + generate_latest(self.boundaries).decode() + started
