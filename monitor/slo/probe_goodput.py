"""Goodput of probe runs: each run judged by :mod:`monitor.slo.goodput` against its class's limits.

A probe run is one request of the ``goodput`` SLI (docs/slo-events.md): it is *good* when it
answered right (no failure category) and each of its latencies is at or under the tightest
threshold of the class's SLOs on that latency, the rule ``vllm bench serve --goodput`` applies.
Its figures are the probe's client-side ones: ``ttft``, ``tpot``, ``e2e``, the server-reported
``queue_time``, ``itl`` = the run's mean per-token ITL, ``stall`` = its longest inter-chunk gap.
The exporter's ``m3mon_probe_goodput_total{good}`` and the store's goodput slices both ask
:func:`probe_is_good`.
"""

from __future__ import annotations

from collections.abc import Callable

from monitor.model import Model
from monitor.probes.result import ProbeResult
from monitor.slo.goodput import RequestLatency, is_good, limits


def request_latency(result: ProbeResult) -> RequestLatency:
    """The run as one request of :mod:`monitor.slo.goodput`."""
    t = result.timings
    longest = t.longest_gap
    return RequestLatency(
        ok=result.ok,
        ttft=t.ttft,
        tpot=t.tpot,
        itl=t.itl_mean,
        e2e=t.e2e,
        queue_time=t.server_queue,
        stall=longest.seconds if longest is not None else None,
    )


def probe_is_good(model: Model, result: ProbeResult) -> bool:
    """Whether the run met every latency limit of its class and answered right."""
    try:
        slos = model.request_class(result.request_class).slos
    except KeyError:
        return False
    return is_good(request_latency(result), limits(slos))


def judge(model: Model) -> Callable[[ProbeResult], bool]:
    """:func:`probe_is_good` bound to ``model`` (what the exporter's probe metrics call)."""
    return lambda result: probe_is_good(model, result)
