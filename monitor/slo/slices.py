"""Per-SLO event slices: how many events were good out of how many, over a stretch of time.

Slices are computed once, at ingest, from what the monitor saw, by applying each SLO's event
definition (:func:`monitor.events.definition`, the same one the rule generator renders as PromQL;
docs/slo-events.md states it in words):

* a probe result (:func:`slices_from_probe`) gives one slice per probe-sourced SLO of its class it
  is an event of, placed at the run's completion (``start == end == completed_at``): a probe that
  times out after 300 s counts in the windows that cover its timeout; a confirmation round's run
  (not a scheduled round) gives none (docs/slo-events.md, "Which probe runs are events");
* a scrape interval (:func:`slices_from_signals`) gives one slice per server-sourced SLO of every
  class the endpoint serves, covering ``(signals.start, signals.end]``;
* a batch of received spans gives one slice per traffic-sourced SLO and endpoint it holds events
  of, at the batch's arrival (:func:`monitor.slo.traffic.traffic_slices`).

A server latency SLO whose threshold is not a bucket edge of the endpoint's histogram yields no
slice for that endpoint ("no data"; the rules' ``SLOThresholdNotBucketEdge`` alert says why).
A slice whose events may have happened inside a maintenance window of its class and endpoint (a
probe's completion in an occurrence's ``(start, end]``; a scrape interval ``(start, end]`` that
overlaps an occurrence at all, :mod:`monitor.maintenance.calendar`) names the window in
``maintenance`` and is counted by no window; it is still stored. Counts are clamped to
``0 <= good <= total`` so an interval with a counter reset never yields negative events. A
cumulative reading (``signals.start is None``) yields no slices.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from monitor import conventions as cv
from monitor import events
from monitor.maintenance import Maintenance
from monitor.model import SLO, Model
from monitor.probes.result import ProbeResult
from monitor.scrape.signals import Signals
from monitor.slo.probe_goodput import probe_is_good

log = logging.getLogger(__name__)

SOURCE_PROBES = "probes"
SOURCE_SERVER = "server"
#: Real requests' spans (:mod:`monitor.slo.traffic`): origin and source of their slices.
SOURCE_TRAFFIC = "traffic"
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
    source: str  # "probes", "server" or "traffic"
    exact: bool = True
    maintenance: str | None = None  # the window excluding these events (monitor.maintenance)

    @property
    def bad(self) -> float:
        return self.total - self.good


def clamped(
    maintenance: Maintenance,
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
    source = origin if origin in (SOURCE_SERVER, SOURCE_TRAFFIC) else SOURCE_PROBES
    excluded = maintenance.excluding(slo.request_class, endpoint, span[1], since=span[0])
    return EventSlice(slo.id, endpoint, origin, span[0], span[1], good, total, source, exact, excluded)


def _probe_counts(model: Model, slo: SLO, result: ProbeResult) -> tuple[float, float] | None:
    """(good, total) for one probe-sourced SLO, or None when the run is no event of it."""
    rule = events.definition(slo)
    if isinstance(rule, events.CounterEvents):
        good = probe_is_good(model, result) if rule is events.PROBE_GOODPUT else None
        labels = events.probe_labels(result.reason, good)
        if not rule.is_valid(labels):
            return None
        return (0.0 if rule.is_bad(labels) else 1.0), 1.0
    if not events.probe_answered(result.reason):
        return None
    samples = result.sli_samples(slo.sli)
    if not samples:
        return None
    bad, total = rule.counts(samples)
    return total - bad, total


def slices_from_probe(model: Model, result: ProbeResult) -> list[EventSlice]:
    """Event slices for every probe-sourced SLO of the result's request class; none for a
    diagnostic run (:attr:`ProbeResult.sli_event`: a confirmation round is no SLI event)."""
    if not result.sli_event:
        return []
    try:
        rc = model.request_class(result.request_class)
    except KeyError:
        log.warning("probe result for unknown request class %r ignored", result.request_class)
        return []
    out = []
    for slo in rc.slos:
        if slo.source != SOURCE_PROBES:
            continue
        counts = _probe_counts(model, slo, result)
        if counts is not None:
            span = (result.completed_at, result.completed_at)
            origin = f"probe:{result.kind}"
            out.append(clamped(model.maintenance, slo, result.endpoint, origin, span, *counts))
    return out


def _server_counts(slo: SLO, signals: Signals) -> tuple[float, float, bool] | None:
    total = signals.total
    rule = events.definition(slo)
    if isinstance(rule, events.CounterEvents):
        if not total.finished:
            return None
        increments: dict[tuple[tuple[str, str], ...], float] = {
            ((cv.L_FINISHED_REASON, k),): v for k, v in total.finished.items()
        }
        bad, valid = rule.counts(increments)
        return valid - bad, valid, True
    name = SERVER_HISTOGRAMS.get(slo.sli)
    hist = total.histograms.get(name) if name else None
    if hist is None:
        return None
    good, count, exact = hist.good_events(rule.threshold)
    if not exact:
        log.warning(
            "SLO %s: threshold %gs is not a bucket edge of the server's %s histogram on %s; "
            "no data for this endpoint (docs/slo-events.md)",
            slo.id,
            rule.threshold,
            name,
            signals.endpoint,
            extra={"kind": "threshold_not_bucket_edge"},
        )
        return None
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
            out.append(clamped(model.maintenance, slo, endpoint, SOURCE_SERVER, span, good, total, exact))
    return out
