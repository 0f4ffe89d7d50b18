"""Probe results as Prometheus counters and histograms (never last-value gauges).

:class:`ProbeMetrics` registers, on a given :class:`~prometheus_client.CollectorRegistry`:

* ``m3mon_probe_total{endpoint,class,kind,result,reason}`` — every probe run, with
  ``result`` success/failure and ``reason`` a failure category (``none`` on success);
* latency histograms labelled ``endpoint,class,kind``: TTFT, ITL (one observation per
  per-token sample), TPOT, e2e, tool turnaround (one per tool round), network (client TTFT −
  server TTFT) and server queue time;
* ``m3mon_probe_long_prompt_ttft_seconds{endpoint,class,kind,cache}`` — the long-prompt probe's
  cold and warm TTFT, which shows whether prefix caching works (the ``ttft_cold`` / ``ttft_warm``
  SLIs);
* ``m3mon_probe_chunk_gap_seconds`` — every gap between two token chunks, undivided, and
  ``m3mon_probe_longest_gap_seconds`` — each stream's longest one (the ``stall`` SLI);
* ``m3mon_probe_retries_total{class,reason}`` — every retried attempt (the client retry policy,
  :mod:`monitor.probes.retry`), ``reason`` one of :data:`~monitor.conventions.RETRY_REASONS`;
* ``m3mon_probe_stage_seconds_total{class,stage}`` — the seconds answered runs spent in each
  stage they measured (:func:`stage_seconds`); divided by ``m3mon_probe_e2e_seconds_sum`` of the
  class it is the stage's share of the probes' e2e;
* ``m3mon_probe_goodput_total{endpoint,class,kind,reason,good}`` — every run, ``good="true"`` when
  it answered right and met every latency limit of its class (the ``goodput`` SLI; only when the
  exporter passes a goodput judge).

Only SLI events are observed: a confirmation round (:mod:`monitor.probes.confirm`) is in no
family. Latencies are observed for every *answered* probe, right or wrong (a wrong answer is still a
wait the user had; correctness is its own SLI) and never for unanswered or ``monitor_error`` runs:
the same events the store counts (:mod:`monitor.events`, docs/slo-events.md). Every
``m3mon_probe_total`` series (each endpoint, class, kind and reason) exists at 0 from the start,
so Prometheus' ``increase()`` sees the first failure of a kind too. Buckets come from
:meth:`monitor.model.Model.latency_buckets`, so every SLO threshold
is an exact bucket edge. Labels never carry model text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram

from monitor import conventions as cv
from monitor.events import probe_answered, probe_labels
from monitor.model import Model
from monitor.probes.genai_metrics import GenAIMetrics
from monitor.probes.result import ProbeResult, Timings

#: Cache states the long-prompt probe reports as ``extra["<state>_ttft"]``.
LONG_PROMPT_CACHE_STATES = ("cold", "warm")
#: Whether a probe run met every latency limit of its class (:mod:`monitor.slo.probe_goodput`,
#: passed in by the exporter so this stage does not import the SLO stage).
GoodputJudge = Callable[[ProbeResult], bool]


class ProbeMetrics:
    """The probe families of the exporter, fed one :class:`ProbeResult` at a time."""

    def __init__(
        self, registry: CollectorRegistry, buckets: Sequence[float], judge: GoodputJudge | None = None
    ) -> None:
        labels = cv.PROBE_LABELS
        self.judge = judge
        self.genai: GenAIMetrics | None = None  # the OTel GenAI client metrics, when exported
        self.total = Counter(cv.PROBE_TOTAL, "Synthetic probe runs by result and failure reason.",
                             cv.PROBE_TOTAL_LABELS, registry=registry)  # fmt: skip

        def hist(name: str, doc: str) -> Histogram:
            return Histogram(name, doc, labels, buckets=tuple(buckets), registry=registry)

        self.ttft = hist(cv.PROBE_TTFT, "Probe time to first token (reasoning or answer), client side.")
        self.itl = hist(cv.PROBE_ITL, "Probe inter-token latency, one sample per token.")
        self.tpot = hist(cv.PROBE_TPOT, "Probe time per output token: (e2e - ttft) / (tokens - 1).")
        self.e2e = hist(cv.PROBE_E2E, "Probe end-to-end time (whole task for agent sessions).")
        self.tool_turnaround = hist(
            cv.PROBE_TOOL_TURNAROUND, "Tool result sent to the model's next first token."
        )
        self.network = hist(
            cv.PROBE_NETWORK, "Client TTFT minus server queue+prefill (network, proxy, tokenizer)."
        )
        self.queue = hist(cv.PROBE_QUEUE, "Server-reported queue time of probe requests.")
        self.chunk_gap = hist(
            cv.PROBE_CHUNK_GAP, "Every gap between two token chunks of a probe stream, undivided."
        )
        self.longest_gap = hist(
            cv.PROBE_LONGEST_GAP, "Longest gap between two token chunks of each probe stream."
        )
        self.goodput = Counter(cv.PROBE_GOODPUT_TOTAL, "Probe runs by whether they met every latency SLO of "
                               "their class and answered right (good=true|false).",
                               cv.PROBE_GOODPUT_LABELS, registry=registry)  # fmt: skip
        self.retries = Counter(
            cv.PROBE_RETRIES_TOTAL,
            "Retried probe attempts by class and why (the client retry policy).",
            (cv.L_CLASS, cv.L_REASON),
            registry=registry,
        )
        self.stage_seconds = Counter(
            cv.PROBE_STAGE_SECONDS_TOTAL,
            "Seconds answered probe runs spent in each latency stage they measured.",
            (cv.L_CLASS, cv.L_STAGE),
            registry=registry,
        )
        self.long_prompt_ttft = Histogram(
            cv.PROBE_LONG_PROMPT_TTFT,
            "Long-prompt probe TTFT by prefix-cache state: cold (new prefix) or warm (same prefix again).",
            (*labels, cv.L_CACHE),
            buckets=tuple(buckets),
            registry=registry,
        )

    @classmethod
    def for_model(
        cls, registry: CollectorRegistry, model: Model, judge: GoodputJudge | None = None
    ) -> ProbeMetrics:
        metrics = cls(registry, model.latency_buckets(), judge)
        metrics.precreate(model)
        return metrics

    def precreate(self, model: Model) -> None:
        """Create every outcome series and SLI histogram of every probed (endpoint, class, kind) at 0.

        ``increase()`` cannot see the events that create a series, so a failure reason's first
        occurrence would otherwise be invisible to the rules while the store counts it.
        """
        outcomes = [None, *cv.FAILURE_CATEGORIES]
        for klass in {c for _, c, _ in targets(model)}:
            for why in cv.RETRY_REASONS:
                self.retries.labels(klass, why)
            for stage in cv.STAGES:
                self.stage_seconds.labels(klass, stage)
        for key in targets(model):
            for reason in outcomes:
                labels = probe_labels(reason)
                self.total.labels(*key, labels[cv.L_RESULT], labels[cv.L_REASON])
            for histogram in (self.ttft, self.tpot, self.e2e, self.queue, self.itl, self.longest_gap):
                histogram.labels(*key)
            if key[2] == "long_prompt":
                for cache in LONG_PROMPT_CACHE_STATES:
                    self.long_prompt_ttft.labels(*key, cache)
            if self.judge is not None:
                for reason in outcomes:
                    self._goodput_child(key, reason, False)
                self._goodput_child(key, None, True)

    def _goodput_child(self, key: tuple[str, str, str], reason: str | None, good: bool) -> Counter:
        labels = probe_labels(reason, good)
        return self.goodput.labels(*key, labels[cv.L_REASON], labels[cv.L_GOOD])

    def observe(self, result: ProbeResult) -> None:
        """Count one run; a diagnostic run (not an SLI event: a confirmation round) in no family."""
        if not result.sli_event:
            return
        key = (result.endpoint, result.request_class, result.kind)
        labels = probe_labels(result.reason)
        self.total.labels(*key, labels[cv.L_RESULT], labels[cv.L_REASON]).inc()
        for why in result.timings.retries:
            self.retries.labels(result.request_class, why).inc()
        if self.genai is not None:
            self.genai.record(result)
        if self.judge is not None:
            self._goodput_child(key, result.reason, self.judge(result)).inc()
        if not probe_answered(result.reason):
            return
        t = result.timings
        for sli, histogram in (("ttft", self.ttft), ("tpot", self.tpot), ("e2e", self.e2e),
                               ("queue_time", self.queue), ("itl", self.itl),
                               ("stall", self.longest_gap)):  # fmt: skip
            _observe_all(histogram, key, result.sli_samples(sli), result.trace_id)
        _observe_all(self.chunk_gap, key, [g.seconds for g in t.chunk_gaps])
        if t.network is not None:
            self.network.labels(*key).observe(max(t.network, 0.0))
        _observe_all(self.tool_turnaround, key, t.tool_turnaround)
        for stage, seconds in stage_seconds(t).items():
            self.stage_seconds.labels(result.request_class, stage).inc(max(seconds, 0.0))
        for cache in LONG_PROMPT_CACHE_STATES:
            _observe_all(
                self.long_prompt_ttft, (*key, cache), result.sli_samples(f"ttft_{cache}"), result.trace_id
            )

    def observe_all(self, results: Iterable[ProbeResult]) -> None:
        for result in results:
            self.observe(result)


def stage_seconds(t: Timings) -> dict[str, float]:
    """The stages one run measured itself: retry time (with the retry policy on), network and the
    server's queue, prefill and decode (with a server view), tool turnaround (agent sessions).
    Tokenization comes only from the server's spans (the report): with per-request metrics it is
    inside ``network``."""
    parts = {"retry": t.retry_seconds if t.retries else None, "network": t.network, "queue": t.server_queue,
             "prefill": t.server_prefill, "decode": t.server_decode,
             "tool_turnaround": sum(t.tool_turnaround) if t.tool_turnaround else None}  # fmt: skip
    return {stage: v for stage, v in parts.items() if v is not None}


def _observe_all(
    histogram: Histogram, labels: tuple[str, ...], values: Iterable[float], trace_id: str | None = None
) -> None:
    """Observe ``values`` in the child of ``labels``, creating it only with a value to observe (an
    empty histogram of a kind that never measures this, e.g. tool turnaround of a chat probe,
    would be a series of zeros whose panels read 0/0 = NaN). With ``trace_id``, each observation
    carries it as an OpenMetrics exemplar (``trace_id``: Grafana links a bucket to the trace)."""
    child = None
    exemplar = {cv.EXEMPLAR_TRACE_ID: trace_id} if trace_id else None
    for value in values:
        if child is None:  # one label lookup per run, not per value
            child = histogram.labels(*labels)
        child.observe(value, exemplar)


def targets(model: Model) -> list[tuple[str, str, str]]:
    """Every (endpoint, class, kind) the model's probe plans run."""
    return [
        (e.name, c.name, kind)
        for c in model.classes
        for e in model.endpoints_for(c.name)
        for kind in c.probe.kinds
    ]
