"""The vocabulary of agreement scenarios: an SLO and the raw events that happen to it.

Nothing here imports :mod:`monitor`: a scenario is plain data that the oracle, the Prometheus
path and the store path each read in their own way. Times are seconds after the scenario start
(the monitor and the vLLM servers start at 0, with every counter at 0); Prometheus scrapes and
both evaluators run on every whole minute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

#: A probe run whose prober raises (the runner must turn it into ``monitor_error``).
CRASH = "crash"

#: vLLM 0.33 default bucket edges (``vllm/v1/metrics/buckets.py``), as a real page shows them.
VLLM_TTFT_EDGES = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                   5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
VLLM_REQUEST_EDGES = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                      60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
VLLM_TOKEN_EDGES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
                    7.5, 10.0, 20.0, 40.0, 80.0)  # fmt: skip
#: The vLLM histogram (as exposed) behind each server-side latency SLI, with its default edges.
VLLM_HISTOGRAMS = {
    "ttft": ("vllm:time_to_first_token_seconds", VLLM_TTFT_EDGES),
    "itl": ("vllm:inter_token_latency_seconds", VLLM_TOKEN_EDGES),
    "tpot": ("vllm:request_time_per_output_token_seconds", VLLM_TOKEN_EDGES),
    "e2e": ("vllm:e2e_request_latency_seconds", VLLM_REQUEST_EDGES),
    "queue_time": ("vllm:request_queue_time_seconds", VLLM_REQUEST_EDGES),
}
FINISHED_REASONS = ("stop", "length", "abort", "error")


@dataclass(frozen=True)
class SLODef:
    """One SLO as the configuration states it (``objective`` in percent, as written)."""

    sli: str
    source: str
    objective: str
    period_days: int = 30
    threshold: float | None = None
    min_events: int | None = None


@dataclass(frozen=True)
class ProbeRun:
    """One probe run: it starts at ``start`` and its outcome is known ``duration`` seconds later.

    ``category`` is None on success, a failure category, or :data:`CRASH`. Timings apply to
    answered runs; ``chunks`` are (gap, tokens) of the token chunks after the first one.
    """

    start: float
    duration: float
    category: str | None = None
    kind: str = "chat"
    ttft: float | None = 0.4
    tpot: float | None = None
    queue: float | None = None
    chunks: tuple[tuple[float, int], ...] = ()
    cold: float | None = None  # long-prompt probes: TTFT of the cold (new prefix) request
    warm: float | None = None  # and of the warm one (the same prompt again)

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True)
class Pool:
    """A vLLM server of the class; ``edges`` of its latency histogram (None: vLLM's defaults).

    From minute ``gone_at`` on, its scrapes fail (the target is gone); in the minutes
    ``[down[0], down[1])`` too (the server is down, e.g. being upgraded: no request finishes, and
    the first step after should be a restart).
    """

    name: str
    edges: tuple[float, ...] | None = None
    gone_at: int | None = None
    down: tuple[int, int] | None = None

    def up(self, minute: int) -> bool:
        restarting = self.down is not None and self.down[0] <= minute < self.down[1]
        return not restarting and (self.gone_at is None or minute < self.gone_at)


@dataclass(frozen=True)
class ServerMinute:
    """What one pool's scrape at ``minute`` sees for the first time.

    ``finished``: requests by ``finished_reason``; ``latencies``: (seconds, count) observations.
    ``restart``: the server restarted since the previous scrape, so its counters start over and
    only these events are on the page (events before the restart, after the last scrape, are lost
    to everyone; ``lost`` records how many for the reader).
    """

    minute: int
    pool: str
    finished: tuple[tuple[str, int], ...] = ()
    latencies: tuple[tuple[float, int], ...] = ()
    restart: bool = False
    lost: int = 0


@dataclass(frozen=True)
class Detection:
    """A detection-time target (docs/slo-events.md §3): ``alert`` first fires by ``onset + within``."""

    alert: str
    onset: int
    within: int
    never: tuple[str, ...] = ()


@dataclass(frozen=True)
class Window:
    """A one-off maintenance window over the scenario minutes ``(start, end]`` (docs/maintenance.md).

    It covers the scenario's class on ``pools`` (empty: the whole class, written as ``classes:``;
    else those pools' endpoints, written as ``endpoints:``).
    """

    name: str
    start: int
    end: int
    pools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Expected:
    """Numbers computed by hand that every source (oracle included) must show.

    ``ratios``: (minute, window, error ratio; None: no data); ``first_fires``: (alert, the minute
    it first fires; None: never) — exact, the ±1-minute tolerance does not apply.
    """

    ratios: tuple[tuple[int, str, float | None], ...] = ()
    first_fires: tuple[tuple[str, int | None], ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    slo: SLODef
    minutes: int
    probes: tuple[ProbeRun, ...] = ()
    server: tuple[ServerMinute, ...] = ()
    pools: tuple[Pool, ...] = (Pool("a"),)
    kinds: tuple[str, ...] = ("chat",)
    probe_interval: float = 60.0
    probe_timeout: float = 120.0
    db_outage: tuple[int, int] | None = None
    detection: Detection | None = None
    finding: str = ""
    limits: tuple[SLODef, ...] = ()  # more latency SLOs of the class, not compared: goodput's limits
    extra_checks: tuple[int, ...] = field(default=())
    maintenance: tuple[Window, ...] = ()
    #: minutes [first, last) in which Prometheus cannot scrape the monitor (a scrape timeout, a
    #: monitor restart): its maintenance gauges go stale there; its store is unaffected
    monitor_down: tuple[int, int] | None = None
    expected: Expected | None = None

    @property
    def checks(self) -> tuple[int, ...]:
        """Minutes at which every window's numbers are compared (alerts: every minute)."""
        every = 5 if self.minutes <= 240 else 15
        hand = {m for m, _, _ in self.expected.ratios} if self.expected is not None else set()
        return tuple(sorted({*range(0, self.minutes + 1, every), self.minutes, *self.extra_checks, *hand}))

    def endpoint(self, pool: str) -> str:
        return f"{self.name}-{pool}"


# --- builders ----------------------------------------------------------------------------------


def rounds(
    kinds: tuple[str, ...],
    every: float,
    until: float,
    make: Callable[[int, str, float], ProbeRun | None],
    first: float = 30.0,
) -> tuple[ProbeRun, ...]:
    """One run per kind every ``every`` seconds from ``first`` while before ``until`` (kinds 5 s apart).

    ``make(i, kind, start)`` returns round ``i``'s run of ``kind`` (None: no run).
    """
    out: list[ProbeRun] = []
    i = 0
    while first + i * every < until:
        for j, kind in enumerate(kinds):
            run = make(i, kind, first + i * every + 5.0 * j)
            if run is not None:
                out.append(run)
        i += 1
    return tuple(out)


def run(
    at: float, kind: str = "chat", category: str | None = None, duration: float = 2.0, **kw: Any
) -> ProbeRun:
    """A probe run (``category`` None: success); ``kw`` sets timings."""
    return ProbeRun(at, duration, category, kind, **kw)


def traffic(
    pool: str,
    minutes: Iterable[int],
    finished: Callable[[int], dict[str, int]],
    latencies: Callable[[int], tuple[tuple[float, int], ...]] | None = None,
) -> tuple[ServerMinute, ...]:
    """Server events per minute from two functions of the minute."""
    out = []
    for m in minutes:
        lat = latencies(m) if latencies is not None else ()
        out.append(ServerMinute(m, pool, tuple(sorted(finished(m).items())), lat))
    return tuple(out)


def requests(good: int, error: int = 0, abort: int = 0, length: int = 0) -> dict[str, int]:
    return {"stop": good, "length": length, "abort": abort, "error": error}
