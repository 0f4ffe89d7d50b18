"""What a bottleneck verdict reads for one class at one instant, whoever gathered it.

The service, ``m3mon slo status`` and the report all read these from the store
(:mod:`monitor.report.collect_bottleneck`); ``bench/verdict.py`` builds them from simulated pools.
:func:`monitor.bottleneck.evidence.gather` reduces them to evidence and
:func:`monitor.bottleneck.rules.decide` names the verdict, so one instant has one verdict
wherever it is shown.

Two windows end at ``end``: the **tail window** (``window``, 15 minutes live) holds enough probe
runs for a P95+ band, and the **recent window** (``recent``, 5 minutes live) holds the pool's own
evidence — scrape intervals, GPU samples, real traffic — and the probes that confirm a cause is
still there, so a verdict clears within ``recent`` of its cause going away.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from monitor.bottleneck.tail import Sample
from monitor.model import Model
from monitor.scrape.signals import Histogram

#: The live windows (docs/bottleneck.md "Windows").
WINDOW = 15 * 60.0
RECENT = 5 * 60.0
#: GPU samples are read over at most this long (the end of the recent window): saturation is
#: named within a minute of its onset and cleared within two of its end.
GPU_WINDOW = 2 * 60.0
#: How far back the batch's ceiling (its peak running requests) is looked for.
PEAK_WINDOW = 60 * 60.0
#: Kinds whose runs loop through tools (their time outside the server is the application's).
TOOL_KINDS = frozenset({"agent_session"})
#: SLIs whose threshold is an objective for the time to the first token (and for e2e).
TTFT_SLIS = ("ttft", "ttft_cold", "ttft_warm", "queue_time")
E2E_SLIS = ("e2e",)


@dataclass(frozen=True)
class PoolPoint:
    """One scrape interval of one endpoint serving the class (``scrape_intervals``)."""

    endpoint: str
    end: float
    requests: float = 0.0  # requests finished in the interval
    waiting: float | None = None  # requests waiting at its end (vLLM num_requests_waiting)
    running: float | None = None
    kv_usage: float | None = None  # 0..1 at its end
    preemptions: float | None = None
    admission_rejections: float | None = None  # refused by the frontend's queue limits (0.33+)
    #: the API server's answers by status in the interval (vLLM "2xx"/"4xx"/"5xx", SGLang codes)
    http_status: Mapping[str, float] = field(default_factory=dict)
    prefix_hit_rate: float | None = None
    histograms: Mapping[str, Histogram] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuPoint:
    """One GPU at one good GPU-exporter scrape (``gpu_samples.devices``)."""

    endpoint: str
    time: float
    device: str  # host/index
    uuid: str | None
    values: Mapping[str, float]  # monitor.scrape.gpu_signals.VERDICT_FIELDS it reported


@dataclass(frozen=True)
class ProbeRun:
    """One probe run of the class: when its outcome was known, whether it needed another attempt,
    and whether an attempt was refused for load (429, 503: shedding)."""

    at: float
    retried: bool = False
    shed: bool = False


@dataclass(frozen=True)
class Objectives:
    """The class's tightest latency thresholds (seconds; None: no such SLO)."""

    ttft: float | None = None
    e2e: float | None = None

    @classmethod
    def of(cls, model: Model, request_class: str) -> Objectives:
        slos = model.request_class(request_class).slos

        def tightest(slis: tuple[str, ...]) -> float | None:
            found = [s.threshold for s in slos if s.sli in slis and s.threshold is not None]
            return min(found) if found else None

        return cls(tightest(TTFT_SLIS), tightest(E2E_SLIS))


@dataclass(frozen=True)
class Inputs:
    """Everything one class's verdict at ``end`` may read."""

    request_class: str
    end: float
    window: float = WINDOW
    recent: float = RECENT
    state: float = GPU_WINDOW  # GPU and KV-cache state: over the last ``state`` of the recent window
    objectives: Objectives = Objectives()
    tools: bool = False  # the class runs tool loops
    shared_with: tuple[str, ...] = ()  # other classes served by the same endpoints
    probes: tuple[Sample, ...] = ()  # answered probe runs with their stages (tail window)
    traffic: tuple[Sample, ...] = ()  # real requests from server spans (recent window)
    runs: tuple[ProbeRun, ...] = ()  # every probe run (tail window)
    pool: tuple[PoolPoint, ...] = ()  # intervals ending in the recent window and the one before
    #: GPU readings in the recent window and the one before (the state is read over the last
    #: ``state`` seconds; the rest says whether the GPUs were busy while requests waited)
    gpus: tuple[GpuPoint, ...] = ()
    gpu_configured: bool = False  # some endpoint of the class has a gpu_exporter
    #: the most requests its endpoints ran at once over the last PEAK_WINDOW (summed): the batch's
    #: ceiling as observed (None: read from ``pool`` alone)
    running_peak: float | None = None
    #: the same per endpoint (the batch that is full or short is one endpoint's)
    running_peaks: Mapping[str, float] = field(default_factory=dict)

    @property
    def recent_start(self) -> float:
        return self.end - self.recent


def stored_histograms(raw: Mapping[str, Any]) -> dict[str, Histogram]:
    """A stored interval's histograms (``scrape_intervals.histograms``); one stored in another
    shape is left out (no evidence rather than a wrong one)."""
    out = {}
    for name, h in raw.items():
        try:
            out[name] = Histogram.from_dict(h)
        except (KeyError, TypeError, ValueError):
            continue
    return out


def class_context(model: Model, request_class: str) -> dict[str, object]:
    """The model's facts about a class that :class:`Inputs` carries (objectives, tools, sharing)."""
    rc = model.request_class(request_class)
    endpoints = model.endpoints_for(request_class)
    others = sorted({c for e in endpoints for c in e.classes} - {request_class})
    return {
        "objectives": Objectives.of(model, request_class),
        "tools": bool(TOOL_KINDS & set(rc.probe.kinds)),
        "shared_with": tuple(others),
        "gpu_configured": any(e.gpu_exporter is not None for e in endpoints),
    }
