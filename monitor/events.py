"""The one definition of every SLI's valid and bad events (docs/slo-events.md is its prose).

Each SLO's events are read from a metric the monitor or the server publishes:

* :class:`CounterEvents` — a counter whose series carry the outcome in a label (the probes'
  ``m3mon_probe_total{reason}``, vLLM's ``request_success_total{finished_reason}``). ``valid``
  and ``bad`` are label matchers: valid events are the increments of the series matching
  ``valid``; bad ones those also matching ``bad``.
* :class:`HistogramEvents` — a latency histogram: valid events are its observations, good ones
  the observations in the bucket whose ``le`` is the threshold, bad = count − good. Pools whose
  histogram has no edge at the threshold contribute nothing (no data), never "all slow".

Both engines derive from :func:`definition`: the rule generator renders the matchers as PromQL
(:mod:`monitor.generate.sli`), and the store applies the very same matchers to what one probe run
or one scrape interval produced (:mod:`monitor.slo.slices`). Neither can change alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from monitor import conventions as cv
from monitor.model import SLO

#: Failure categories meaning "the service did not answer".
UNANSWERED: tuple[str, ...] = tuple(r for r in cv.FAILURE_CATEGORIES if r in cv.AVAILABILITY_FAILURES)
#: Categories of an answer that was wrong.
WRONG_ANSWER: tuple[str, ...] = tuple(
    r for r in cv.FAILURE_CATEGORIES if r not in cv.AVAILABILITY_FAILURES and r not in cv.MONITOR_FAILURES
)
MONITOR: tuple[str, ...] = tuple(r for r in cv.FAILURE_CATEGORIES if r in cv.MONITOR_FAILURES)
#: Values of the goodput counter's ``good`` label.
GOOD_TRUE, GOOD_FALSE = "true", "false"


@dataclass(frozen=True)
class Match:
    """A label matcher: the label's value is (``negate=False``) or is not one of ``values``."""

    label: str
    values: tuple[str, ...]
    negate: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        inside = labels.get(self.label, "") in self.values
        return inside != self.negate


@dataclass(frozen=True)
class CounterEvents:
    """Events are increments of ``metric``; valid ones match ``valid``, bad ones also ``bad``."""

    metric: str
    valid: tuple[Match, ...]
    bad: tuple[Match, ...]

    def is_valid(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels) for m in self.valid)

    def is_bad(self, labels: Mapping[str, str]) -> bool:
        return self.is_valid(labels) and all(m.matches(labels) for m in self.bad)

    def counts(self, increments: Mapping[tuple[tuple[str, str], ...], float]) -> tuple[float, float]:
        """(bad, valid) from increments keyed by sorted label pairs."""
        bad = valid = 0.0
        for key, value in increments.items():
            labels = dict(key)
            if self.is_valid(labels):
                valid += value
                if self.is_bad(labels):
                    bad += value
        return bad, valid


@dataclass(frozen=True)
class HistogramEvents:
    """Events are observations of ``metric`` (a histogram base name); good ones are ``<= threshold``."""

    metric: str
    threshold: float
    per_pool: bool  # server histograms: only pools with an edge at the threshold count
    select: tuple[Match, ...] = ()  # series of the histogram that hold this SLI (e.g. cache="warm")

    def counts(self, observations: tuple[float, ...]) -> tuple[float, float]:
        """(bad, valid) of raw observations (probe timings)."""
        bad = sum(1 for v in observations if v > self.threshold)
        return float(bad), float(len(observations))


Definition = CounterEvents | HistogramEvents

_PROBE_COUNTED = Match(cv.L_REASON, MONITOR, negate=True)
_PROBE_ANSWERED = Match(cv.L_REASON, (*UNANSWERED, *MONITOR), negate=True)

#: Probe latency SLI -> the monitor's histogram of it.
PROBE_HISTOGRAMS: dict[str, str] = {
    "ttft": cv.PROBE_TTFT,
    "itl": cv.PROBE_ITL,
    "tpot": cv.PROBE_TPOT,
    "e2e": cv.PROBE_E2E,
    "queue_time": cv.PROBE_QUEUE,
    "stall": cv.PROBE_LONGEST_GAP,
    "ttft_cold": cv.PROBE_LONG_PROMPT_TTFT,
    "ttft_warm": cv.PROBE_LONG_PROMPT_TTFT,
}
#: Probe latency SLIs read from some series of a shared histogram: which ones.
PROBE_SELECT: dict[str, tuple[Match, ...]] = {
    "ttft_cold": (Match(cv.L_CACHE, ("cold",)),),
    "ttft_warm": (Match(cv.L_CACHE, ("warm",)),),
}
#: Server latency SLI -> vLLM's histogram of it.
SERVER_HISTOGRAMS: dict[str, str] = {
    "ttft": cv.VLLM_TTFT,
    "itl": cv.VLLM_ITL,
    "tpot": cv.VLLM_TPOT,
    "e2e": cv.VLLM_E2E,
    "queue_time": cv.VLLM_QUEUE,
}

PROBE_AVAILABILITY = CounterEvents(
    cv.PROBE_TOTAL, valid=(_PROBE_COUNTED,), bad=(Match(cv.L_REASON, UNANSWERED),)
)
PROBE_CORRECTNESS = CounterEvents(
    cv.PROBE_TOTAL, valid=(_PROBE_ANSWERED,), bad=(Match(cv.L_REASON, WRONG_ANSWER),)
)
#: Goodput: every counted run is an event; bad unless it answered right and met every latency
#: limit of its class (:mod:`monitor.slo.goodput`, which decides the ``good`` label).
PROBE_GOODPUT = CounterEvents(
    cv.PROBE_GOODPUT_TOTAL, valid=(_PROBE_COUNTED,), bad=(Match(cv.L_GOOD, (GOOD_FALSE,)),)
)
SERVER_AVAILABILITY = CounterEvents(
    cv.VLLM_REQUEST_SUCCESS,
    valid=(Match(cv.L_FINISHED_REASON, cv.FINISHED_NOT_COUNTED, negate=True),),
    bad=(Match(cv.L_FINISHED_REASON, cv.FINISHED_BAD),),
)


def traffic_goodput(slo: SLO) -> CounterEvents:
    """Goodput of real traffic: every real request of the SLO's tenant and priority band (all of
    them when it names none) is an event; bad unless it met every latency limit of its class
    (:mod:`monitor.slo.span_goodput` decides the ``good`` label)."""
    scope = [Match(cv.L_TENANT, (slo.tenant,))] if slo.tenant is not None else []
    scope += [Match(cv.L_PRIORITY, (slo.priority,))] if slo.priority is not None else []
    return CounterEvents(cv.TRAFFIC_TOTAL, valid=tuple(scope), bad=(Match(cv.L_GOOD, (GOOD_FALSE,)),))


def definition(slo: SLO) -> Definition:
    """The events of ``slo``: which metric, which series are valid, which are bad."""
    if slo.source == "traffic":
        return traffic_goodput(slo)
    if slo.sli == "availability":
        return PROBE_AVAILABILITY if slo.source == "probes" else SERVER_AVAILABILITY
    if slo.sli == "correctness":
        return PROBE_CORRECTNESS
    if slo.sli == "goodput":
        return PROBE_GOODPUT
    assert slo.threshold is not None, "latency SLOs have a threshold (config validation)"
    if slo.source == "probes":
        select = PROBE_SELECT.get(slo.sli, ())
        return HistogramEvents(PROBE_HISTOGRAMS[slo.sli], slo.threshold, per_pool=False, select=select)
    return HistogramEvents(SERVER_HISTOGRAMS[slo.sli], slo.threshold, per_pool=True)


def probe_answered(reason: str | None) -> bool:
    """Whether a probe run with failure ``reason`` (None: success) got an answer from the service.

    Only answered runs have latency events (they are the runs the exporter observes latency for).
    """
    return _PROBE_ANSWERED.matches({cv.L_REASON: reason or cv.REASON_NONE})


def probe_labels(reason: str | None, good: bool | None = None) -> dict[str, str]:
    """The outcome labels a probe run's ``m3mon_probe_total`` increment carries; with ``good``,
    also its ``m3mon_probe_goodput_total`` label (whether it met every latency limit)."""
    result = cv.RESULT_SUCCESS if reason is None else cv.RESULT_FAILURE
    labels = {cv.L_RESULT: result, cv.L_REASON: reason or cv.REASON_NONE}
    if good is not None:
        labels[cv.L_GOOD] = GOOD_TRUE if good else GOOD_FALSE
    return labels


def traffic_labels(tenant: str, priority: str, good: bool) -> dict[str, str]:
    """The labels of one real request's ``m3mon_traffic_requests_total`` increment (beside its
    endpoint and class)."""
    return {cv.L_TENANT: tenant, cv.L_PRIORITY: priority, cv.L_GOOD: GOOD_TRUE if good else GOOD_FALSE}
