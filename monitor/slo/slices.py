"""Per-SLO event slices: how many events were good out of how many, over a stretch of time.

Slices are computed once, at ingest, from what the monitor saw:

* a probe result (:func:`slices_from_probe`) gives one slice per probe-sourced SLO of its class,
  stamped at the probe's start (``start == end``);
* a scrape interval (:func:`slices_from_signals`) gives one slice per server-sourced SLO of every
  class the endpoint serves, covering ``(signals.start, signals.end]``.

Rules (see docs/store-and-slo.md):

* probes, availability: 1 event, good unless the failure is an availability failure
  (:data:`monitor.conventions.AVAILABILITY_FAILURES`);
* probes, correctness: 1 event when the service answered, good when the probe passed; a probe
  that got no answer is an availability event only;
* probes, latency: only answered probes with the timing count; ``itl`` counts every per-token
  gap sample (or the mean when there are none), the others one event, good when ``<= threshold``;
* server, availability: finished requests except aborted ones, bad when ``finished_reason`` is
  ``error`` (``conventions.FINISHED_BAD`` / ``FINISHED_NOT_COUNTED``: the generated rules agree);
* server, latency: ``Histogram.good_events(threshold)`` of the matching histogram; when the
  threshold is not a bucket edge the count is interpolated and the slice has ``exact=False``.

Counts are clamped to ``0 <= good <= total`` so an interval with a counter reset never yields
negative events. A cumulative reading (``signals.start is None``) yields no slices.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from monitor import conventions as cv
from monitor.model import SLO, Model
from monitor.probes.result import ProbeResult
from monitor.scrape.signals import Signals

log = logging.getLogger(__name__)

SOURCE_PROBES = "probes"
SOURCE_SERVER = "server"
#: SLI -> canonical histogram name in :class:`monitor.scrape.signals.EngineSignals`.
SERVER_HISTOGRAMS = {"ttft": "ttft", "itl": "itl", "tpot": "tpot", "e2e": "e2e", "queue_time": "queue"}


@dataclass(frozen=True)
class EventSlice:
    """Good and total events of one SLO over ``(start, end]`` (``start == end`` for a probe)."""

    slo_id: str
    endpoint: str
    origin: str  # "probe:<kind>" or "server": with slo_id, endpoint and end, the natural key
    start: float
    end: float
    good: float
    total: float
    source: str  # "probes" or "server"
    exact: bool = True

    @property
    def bad(self) -> float:
        return self.total - self.good


def _clamped(
    slo: SLO,
    endpoint: str,
    origin: str,
    span: tuple[float, float],
    good: float,
    total: float,
    exact: bool = True,
) -> EventSlice:
    total = max(0.0, total)
    good = min(max(0.0, good), total)
    source = SOURCE_SERVER if origin == SOURCE_SERVER else SOURCE_PROBES
    return EventSlice(slo.id, endpoint, origin, span[0], span[1], good, total, source, exact)


def _probe_latency(slo: SLO, result: ProbeResult) -> tuple[float, ...]:
    t = result.timings
    if slo.sli == "itl":
        return t.itl_samples or ((t.itl_mean,) if t.itl_mean is not None else ())
    value = {"ttft": t.ttft, "tpot": t.tpot, "e2e": t.e2e, "queue_time": t.server_queue}[slo.sli]
    return (value,) if value is not None else ()


def _probe_counts(slo: SLO, result: ProbeResult) -> tuple[float, float] | None:
    """(good, total) for one probe-sourced SLO, or None when the probe says nothing about it."""
    if slo.sli == "availability":
        return (1.0 if result.available else 0.0), 1.0
    if not result.available:
        return None
    if slo.sli == "correctness":
        return (1.0 if result.ok else 0.0), 1.0
    samples = _probe_latency(slo, result)
    if not samples or slo.threshold is None:
        return None
    return float(sum(1 for s in samples if s <= slo.threshold)), float(len(samples))


def slices_from_probe(model: Model, result: ProbeResult) -> list[EventSlice]:
    """Event slices for every probe-sourced SLO of the result's request class."""
    try:
        rc = model.request_class(result.request_class)
    except KeyError:
        log.warning("probe result for unknown request class %r ignored", result.request_class)
        return []
    out = []
    for slo in rc.slos:
        if slo.source != SOURCE_PROBES:
            continue
        counts = _probe_counts(slo, result)
        if counts is not None:
            span = (result.started_at, result.started_at)
            out.append(_clamped(slo, result.endpoint, f"probe:{result.kind}", span, *counts))
    return out


def _server_counts(slo: SLO, signals: Signals) -> tuple[float, float, bool] | None:
    total = signals.total
    if slo.sli == "availability":
        if not total.finished:
            return None
        bad = sum(v for k, v in total.finished.items() if k in cv.FINISHED_BAD)
        valid = total.requests - sum(v for k, v in total.finished.items() if k in cv.FINISHED_NOT_COUNTED)
        return valid - bad, valid, True
    name = SERVER_HISTOGRAMS.get(slo.sli)
    hist = total.histograms.get(name) if name else None
    if hist is None or slo.threshold is None:
        return None
    good, count, exact = hist.good_events(slo.threshold)
    if not exact:
        log.warning(
            "SLO %s: threshold %gs is not a bucket edge of the server's %s histogram on %s; "
            "good events are interpolated",
            slo.id,
            slo.threshold,
            name,
            signals.endpoint,
        )
    return good, count, exact


def _server_slos(model: Model, endpoint: str) -> Iterator[SLO]:
    for ep in model.endpoints:
        if ep.name == endpoint:
            for cls in ep.classes:
                yield from (s for s in model.request_class(cls).slos if s.source == SOURCE_SERVER)


def slices_from_signals(model: Model, endpoint: str, signals: Signals) -> list[EventSlice]:
    """Event slices for every server-sourced SLO of the classes ``endpoint`` serves.

    An endpoint serving several classes reports one set of histograms, so each of those classes'
    server-sourced SLOs sees the endpoint's whole traffic.
    """
    if signals.start is None or signals.end <= signals.start:
        return []
    out = []
    for slo in _server_slos(model, endpoint):
        counts = _server_counts(slo, signals)
        if counts is not None:
            good, total, exact = counts
            span = (signals.start, signals.end)
            out.append(_clamped(slo, endpoint, SOURCE_SERVER, span, good, total, exact))
    return out
