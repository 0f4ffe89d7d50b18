"""The verdict's gauges: each class's bottleneck (a state set), the seconds of every cause it
names, and its tail's stage shares.

Labels are bounded: ``class`` (configured classes), ``verdict`` (:data:`~monitor.bottleneck.rules.
VERDICTS`), ``latency`` (ttft, e2e), ``quantile`` (p95, p99, p50) and ``stage`` (the latency's stages
and ``other``). A band without an attribution publishes no shares (no stale values): the P99+ band needs 100
requests with a server view in the window (:data:`~monitor.bottleneck.tail.MIN_REQUESTS_P99`).
"""

from __future__ import annotations

from contextlib import suppress

from prometheus_client import CollectorRegistry, Gauge

from monitor.bottleneck.rules import VERDICTS, Verdict
from monitor.conventions import (
    BOTTLENECK_CAUSE_SECONDS,
    BOTTLENECK_VERDICT,
    L_CLASS,
    L_LATENCY,
    L_QUANTILE,
    L_SOURCE,
    L_STAGE,
    L_VERDICT,
    TAIL_STAGE_SHARE,
)


class BottleneckMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.verdict = Gauge(
            BOTTLENECK_VERDICT,
            "1 for the class's bottleneck verdict over the last window, 0 for the other verdicts "
            "(docs/bottleneck.md).",
            [L_CLASS, L_VERDICT],
            registry=registry,
        )
        self.share = Gauge(
            TAIL_STAGE_SHARE,
            "Share of the latency of the class's probe requests in the band (p95: at or above P95; "
            "p99: at or above P99; p50: at or below P50) spent in the stage, over the verdict's window.",
            [L_CLASS, L_LATENCY, L_QUANTILE, L_STAGE],
            registry=registry,
        )
        self.cause = Gauge(
            BOTTLENECK_CAUSE_SECONDS,
            "Seconds a request of the class's tail spends in each cause the verdict names (0: a cause "
            "whose cost is refusals or a growing queue), and the evidence that named it (source: probes, "
            "real-traffic spans, server histograms, server gauges), docs/bottleneck.md.",
            [L_CLASS, L_VERDICT, L_SOURCE],
            registry=registry,
        )
        self._shares: dict[str, set[tuple[str, str, str]]] = {}  # class -> published share labels
        self._causes: dict[str, set[tuple[str, str]]] = {}

    def publish(self, v: Verdict) -> None:
        """Replace the class's series with verdict ``v``'s."""
        self.forget(v.request_class)
        for name in VERDICTS:
            self.verdict.labels(v.request_class, name).set(1.0 if name == v.verdict else 0.0)
        for s in v.evidence.tail:
            for stage, share in s.shares:
                self.share.labels(v.request_class, s.metric, s.band, stage).set(share)
        for c in v.causes:
            self.cause.labels(v.request_class, c.verdict, c.source).set(c.seconds)
        self._causes[v.request_class] = {(c.verdict, c.source) for c in v.causes}
        self._shares[v.request_class] = {
            (s.metric, s.band, stage) for s in v.evidence.tail for stage, _ in s.shares
        }

    def forget(self, cls: str) -> None:
        """Drop every series of class ``cls`` (a class reloaded away, or before republishing)."""
        with suppress(KeyError):
            for name in VERDICTS:
                self.verdict.remove(cls, name)
        for labels in self._shares.pop(cls, set()):
            self.share.remove(cls, *labels)
        for verdict, source in self._causes.pop(cls, set()):
            self.cause.remove(cls, verdict, source)
