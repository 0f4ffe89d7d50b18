"""Goodput: one request is *good* when it meets every latency objective of its class at once.

This is the one definition used by the goodput SLI, the replay benchmark, the operating
contract and the report's goodput of real traffic (:mod:`monitor.slo.span_goodput`). It follows
``vllm bench serve --goodput KEY:VALUE ...`` where the two overlap: a request counts towards
goodput only if each constrained per-request metric is at or under its limit (vLLM's keys
``ttft``, ``tpot``, ``e2el`` are our ``ttft``, ``tpot``, ``e2e``).

Where they differ:

* The limits are not given on the command line; they are the class's latency SLO thresholds.
  A class with two objectives on one SLI (e.g. TTFT P95 ≤ 2.5 s and P99 ≤ 5 s) constrains each
  request by the tighter one: a request slower than 2.5 s did not meet "every objective".
* We also constrain ``itl`` (the request's per-request inter-token figure, see
  :class:`RequestLatency`), ``queue_time`` and ``stall`` (the request's longest gap between two
  chunks of its stream) when the class has objectives on them.
* A request whose constrained metric is unknown (``None``: e.g. no second token, so no TPOT) is
  judged on the metrics it has, as vLLM does for one-token outputs (TPOT 0); a request that
  failed (no answer, wrong answer) is never good.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from monitor.model import SLO

#: Per-request metrics a goodput limit may constrain (the latency SLIs).
GOODPUT_METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2e", "queue_time", "stall")


@dataclass(frozen=True)
class RequestLatency:
    """One request's latencies in seconds (``None``: not measured for this request).

    ``itl`` is the request's inter-token figure the class's ``itl`` objective is judged on.
    """

    ok: bool
    ttft: float | None = None
    tpot: float | None = None
    itl: float | None = None
    e2e: float | None = None
    queue_time: float | None = None
    stall: float | None = None  # the longest inter-chunk gap of the stream

    def value(self, metric: str) -> float | None:
        found: float | None = getattr(self, metric)
        return found


def limits(slos: Iterable[SLO]) -> dict[str, float]:
    """The per-request limit of each constrained metric: the tightest latency threshold."""
    out: dict[str, float] = {}
    for slo in slos:
        if slo.sli in GOODPUT_METRICS and slo.threshold is not None:
            out[slo.sli] = min(out.get(slo.sli, slo.threshold), slo.threshold)
    return out


def is_good(request: RequestLatency, limit: Mapping[str, float]) -> bool:
    """Whether ``request`` answered and met every limit it has a measurement for."""
    if not request.ok:
        return False
    for metric, bound in limit.items():
        measured = request.value(metric)
        if measured is not None and measured > bound:
            return False
    return True


@dataclass(frozen=True)
class Goodput:
    """Goodput of a set of requests over ``duration`` seconds."""

    good: int
    total: int
    good_output_tokens: int
    duration: float

    @property
    def ratio(self) -> float | None:
        """Share of requests that were good (``None`` without requests)."""
        return self.good / self.total if self.total else None

    @property
    def request_rate(self) -> float:
        """Good requests per second (vLLM's ``request_goodput``)."""
        return self.good / self.duration if self.duration > 0 else 0.0

    @property
    def token_rate(self) -> float:
        """Output tokens of good requests per second (token goodput)."""
        return self.good_output_tokens / self.duration if self.duration > 0 else 0.0


def goodput(
    requests: Iterable[tuple[RequestLatency, int]], limit: Mapping[str, float], duration: float
) -> Goodput:
    """Goodput of ``(request, output_tokens)`` pairs against ``limit`` over ``duration`` seconds."""
    good = total = tokens = 0
    for request, output_tokens in requests:
        total += 1
        if is_good(request, limit):
            good += 1
            tokens += output_tokens
    return Goodput(good=good, total=total, good_output_tokens=tokens, duration=duration)
