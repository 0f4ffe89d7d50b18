"""Probe results as Prometheus counters and histograms (never last-value gauges).

:class:`ProbeMetrics` registers, on a given :class:`~prometheus_client.CollectorRegistry`:

* ``m3mon_probe_total{endpoint,class,kind,result,reason}`` — every probe run, with
  ``result`` success/failure and ``reason`` a failure category (``none`` on success);
* latency histograms labelled ``endpoint,class,kind``: TTFT, ITL (one observation per
  per-token sample), TPOT, e2e, tool turnaround (one per tool round), network (client TTFT −
  server TTFT) and server queue time;
* ``m3mon_probe_long_prompt_ttft_seconds{endpoint,class,kind,cache}`` — the long-prompt probe's
  cold and warm TTFT, which shows whether prefix caching works.

Latencies are observed for every *answered* probe, right or wrong (a wrong answer is still a
wait the user had; correctness is its own SLI) and never for unanswered or ``monitor_error`` runs:
the same events the store counts (:mod:`monitor.events`, docs/slo-events.md). Every
``m3mon_probe_total`` series (each endpoint, class, kind and reason) exists at 0 from the start,
so Prometheus' ``increase()`` sees the first failure of a kind too. Buckets come from
:meth:`monitor.model.Model.latency_buckets`, so every SLO threshold
is an exact bucket edge. Labels never carry model text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram

from monitor import conventions as cv
from monitor.events import probe_answered, probe_labels
from monitor.model import Model
from monitor.probes.result import ProbeResult

#: Cache states the long-prompt probe reports as ``extra["<state>_ttft"]``.
LONG_PROMPT_CACHE_STATES = ("cold", "warm")


class ProbeMetrics:
    """The probe families of the exporter, fed one :class:`ProbeResult` at a time."""

    def __init__(self, registry: CollectorRegistry, buckets: Sequence[float]) -> None:
        labels = cv.PROBE_LABELS
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
        self.long_prompt_ttft = Histogram(
            cv.PROBE_LONG_PROMPT_TTFT,
            "Long-prompt probe TTFT by prefix-cache state: cold (new prefix) or warm (same prefix again).",
            (*labels, cv.L_CACHE),
            buckets=tuple(buckets),
            registry=registry,
        )

    @classmethod
    def for_model(cls, registry: CollectorRegistry, model: Model) -> ProbeMetrics:
        metrics = cls(registry, model.latency_buckets())
        metrics.precreate(model)
        return metrics

    def precreate(self, model: Model) -> None:
        """Create every outcome series and SLI histogram of every probed (endpoint, class, kind) at 0.

        ``increase()`` cannot see the events that create a series, so a failure reason's first
        occurrence would otherwise be invisible to the rules while the store counts it.
        """
        outcomes = [None, *cv.FAILURE_CATEGORIES]
        for key in targets(model):
            for reason in outcomes:
                labels = probe_labels(reason)
                self.total.labels(*key, labels[cv.L_RESULT], labels[cv.L_REASON])
            for histogram in (self.ttft, self.tpot, self.e2e, self.queue, self.itl):
                histogram.labels(*key)

    def observe(self, result: ProbeResult) -> None:
        key = (result.endpoint, result.request_class, result.kind)
        labels = probe_labels(result.reason)
        self.total.labels(*key, labels[cv.L_RESULT], labels[cv.L_REASON]).inc()
        if not probe_answered(result.reason):
            return
        t = result.timings
        for sli, histogram in (("ttft", self.ttft), ("tpot", self.tpot), ("e2e", self.e2e),
                               ("queue_time", self.queue), ("itl", self.itl)):  # fmt: skip
            _observe_all(histogram.labels(*key), t.sli_samples(sli))
        if t.network is not None:
            self.network.labels(*key).observe(max(t.network, 0.0))
        _observe_all(self.tool_turnaround.labels(*key), t.tool_turnaround)
        for cache in LONG_PROMPT_CACHE_STATES:
            ttft = result.extra.get(f"{cache}_ttft")
            if ttft is not None:
                self.long_prompt_ttft.labels(*key, cache).observe(max(ttft, 0.0))

    def observe_all(self, results: Iterable[ProbeResult]) -> None:
        for result in results:
            self.observe(result)


def _observe_all(child: Histogram, values: Iterable[float]) -> None:
    for value in values:
        child.observe(value)


def targets(model: Model) -> list[tuple[str, str, str]]:
    """Every (endpoint, class, kind) the model's probe plans run."""
    return [
        (e.name, c.name, kind)
        for c in model.classes
        for e in model.endpoints_for(c.name)
        for kind in c.probe.kinds
    ]
