"""What one probe run yields: verdict, client-side timings, usage, server view and a short log.

This is the contract between the probers (``monitor/probes/<kind>.py``) and everything
downstream (exporter, store, SLO evaluation, report). All durations are seconds measured on the
monotonic clock; ``started_at`` is wall-clock Unix time for storage and reports.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from monitor.conventions import (
    AVAILABILITY_FAILURES,
    FAILURE_CATEGORIES,
    MONITOR_FAILURES,
    PURPOSE_SLI,
    PURPOSES,
)


@dataclass(frozen=True)
class Gap:
    """One gap between consecutive token chunks of a stream (docs/probes.md, "Inter-token latency").

    ``at``: seconds after the request was sent when the gap began (the earlier chunk arrived);
    ``seconds``: the gap, undivided; ``tokens``: tokens of the chunk that ended it (``k`` > 1 for
    a multi-token chunk, e.g. speculative decoding); ``before``: output tokens received before it.
    """

    at: float
    seconds: float
    tokens: int
    before: int


@dataclass(frozen=True)
class Timings:
    """Client-side timings from the SSE stream, plus the server's view when it reports one."""

    connect: float | None = None  # TCP/TLS connect (None when the connection was reused)
    headers: float | None = None  # request sent -> response headers
    ttft: float | None = None  # request sent -> first token of any kind (reasoning or answer)
    ttft_answer: float | None = None  # request sent -> first answer (content / tool call) token
    first_reasoning: float | None = None  # request sent -> first reasoning token
    itl_mean: float | None = None  # mean inter-token latency between content chunks, per token
    itl_p50: float | None = None
    itl_p99: float | None = None
    itl_samples: tuple[float, ...] = ()  # per-token ITL samples (chunk gap / tokens in chunk)
    chunk_gaps: tuple[Gap, ...] = ()  # every inter-chunk gap, undivided, with its chunk's tokens
    tpot: float | None = None  # (e2e - ttft) / (output tokens - 1)
    e2e: float | None = None  # request sent -> stream finished (whole task for agent sessions)
    tool_turnaround: tuple[float, ...] = ()  # per tool round: tool result sent -> first token after
    turn_ttft: tuple[float, ...] = ()  # agent sessions: TTFT of each turn
    # Server-side view (per-request metrics or OTLP span), when the server reports it.
    server_queue: float | None = None
    server_prefill: float | None = None
    server_decode: float | None = None
    server_ttft: float | None = None
    network: float | None = None  # client TTFT - retry time - server TTFT (proxy + network + tokenization)
    retry_seconds: float = 0.0  # time before the final attempt was sent (failed attempts + backoff)
    retries: tuple[str, ...] = ()  # why each earlier attempt was retried (monitor.probes.retry.REASONS)

    def sli_samples(self, sli: str) -> tuple[float, ...]:
        """The latency events this run gives latency SLI ``sli``: what the exporter observes and the
        store counts (docs/slo-events.md). ``itl`` gives one sample per token; the others one value.
        Negative clock artefacts are clamped to 0.
        """
        if sli == "itl":
            values: tuple[float | None, ...] = self.itl_samples
        elif sli == "stall":
            longest = self.longest_gap
            values = (longest.seconds if longest is not None else None,)
        else:
            values = ({"ttft": self.ttft, "tpot": self.tpot, "e2e": self.e2e,
                       "queue_time": self.server_queue}[sli],)  # fmt: skip
        return tuple(max(v, 0.0) for v in values if v is not None)

    @property
    def longest_gap(self) -> Gap | None:
        """The stream's longest inter-chunk gap (the first of equal ones), None without gaps."""
        return max(self.chunk_gaps, key=lambda g: g.seconds, default=None)

    def stored(self) -> dict[str, Any]:
        """The timings as stored with a probe result: the per-token and per-gap lists left out
        (the store keeps them as a histogram, :func:`monitor.probes.gaps.itl_histogram`), the
        longest gap's size and position kept as ``stall``."""
        out = {k: v for k, v in asdict(self).items() if k not in ("itl_samples", "chunk_gaps")}
        longest = self.longest_gap
        out["stall"] = None if longest is None else asdict(longest)
        return out


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None


@dataclass(frozen=True)
class ProbeResult:
    """One probe run against one endpoint for one request class."""

    endpoint: str
    request_class: str
    kind: str
    started_at: float  # wall-clock Unix seconds
    reason: str | None  # None on success, else one of FAILURE_CATEGORIES
    timings: Timings = field(default_factory=Timings)
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    finish_reason: str | None = None
    status_code: int | None = None
    trace_id: str | None = None
    detail: str = ""  # one line saying why it failed (never model text verbatim beyond 200 chars)
    extra: dict[str, float] = field(default_factory=dict)  # kind-specific numbers (cold/warm TTFT...)
    log: tuple[str, ...] = ()
    finished_at: float | None = None  # wall-clock Unix seconds the outcome was known (completion/timeout)
    crashed: bool = False  # the prober itself raised; ``reason`` is then monitor_error (see docs/probes.md)
    #: why it ran (PURPOSES): ``sli`` a scheduled round; anything else is diagnostic (:attr:`sli_event`)
    purpose: str = PURPOSE_SLI

    def __post_init__(self) -> None:
        if self.reason is not None and self.reason not in FAILURE_CATEGORIES:
            raise ValueError(f"unknown failure category {self.reason!r}")
        if self.purpose not in PURPOSES:
            raise ValueError(f"unknown probe purpose {self.purpose!r}")

    @property
    def sli_event(self) -> bool:
        """Whether the run is an SLI event of its class's probe SLOs: only scheduled rounds are. A
        diagnostic run (a confirmation round) is stored for the bottleneck verdict, but counts in no
        SLI, exporter probe family or report figure (docs/slo-events.md)."""
        return self.purpose == PURPOSE_SLI

    @property
    def ok(self) -> bool:
        return self.reason is None

    @property
    def available(self) -> bool:
        """The service answered (correctness may still have failed); False for ``monitor_error``,
        where the monitor never learnt whether it would have (docs/slo-events.md)."""
        return self.reason not in AVAILABILITY_FAILURES and self.reason not in MONITOR_FAILURES

    def sli_samples(self, sli: str) -> tuple[float, ...]:
        """The latency events of latency SLI ``sli`` in this run (docs/slo-events.md): the
        timings' own (:meth:`Timings.sli_samples`), or the long-prompt probe's cold / warm TTFT."""
        if sli in ("ttft_cold", "ttft_warm"):
            value = self.extra.get(f"{sli.removeprefix('ttft_')}_ttft")
            return () if value is None else (max(value, 0.0),)
        return self.timings.sli_samples(sli)

    @property
    def completed_at(self) -> float:
        """When the outcome was known: the SLI events of this run happen then (docs/slo-events.md).

        ``finished_at`` when the runner stamped it; otherwise start plus the measured duration.
        """
        if self.finished_at is not None:
            return self.finished_at
        return self.started_at + max(0.0, self.timings.e2e or 0.0)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d
