"""The P99+ band (issue 25: "which stage owns P95 and P99"), against shares counted by hand from
docs/bottleneck.md's definition: the requests at or above the nearest-rank P99, attributed only
with at least 100 requests (its tail then holds two), in the tail, the verdict's summary and the
exporter's ``quantile="p99"`` series.

The constructed class has 100 requests: 94 typical ones (network 0.05 s, queue 0.05 s, prefill
0.4 s), 4 with a long prefill (2.5 s) and 2 that queued 4.0 s. The P95+ band (ranks 95-100) is
led by the prefill; the P99+ band (ranks 99-100, the two queued ones) is owned by the queue.
"""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.inputs import Inputs
from monitor.bottleneck.metrics import BottleneckMetrics
from monitor.bottleneck.rules import decide
from monitor.bottleneck.tail import SOURCE_METRICS, Sample, attribute_class

END = 10_000.0


def _page(registry: CollectorRegistry) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _sample(k: int, queue: float, prefill: float) -> Sample:
    parts = {"network": 0.05, "queue": queue, "prefill": prefill, "decode": 1.0}
    ttft = 0.05 + queue + prefill
    return Sample("chat", END - 500 + k, parts, SOURCE_METRICS, ttft, ttft + 1.0)


def samples(n_typical: int = 94) -> list[Sample]:
    out = [_sample(k, 0.05, 0.4) for k in range(n_typical)]
    out += [_sample(200 + k, 0.05, 2.5) for k in range(4)]
    return out + [_sample(300 + k, 4.0, 0.4) for k in range(2)]


def test_p99_band_is_owned_by_another_stage_than_p95() -> None:
    got = {(t.metric, t.band): t for t in attribute_class("chat", samples())}
    # TTFT: 94 x 0.5 s, 4 x 2.6 s, 2 x 4.45 s. P95 (rank 95) = 2.6 s: the 6 slow ones, 19.3 s, of
    # which prefill 4*2.5 + 2*0.4 = 10.8, queue 4*0.05 + 2*4.0 = 8.2, network 0.3
    p95 = got[("ttft", "p95")]
    assert (p95.requests, p95.bound, p95.dominant) == (6, pytest.approx(2.6), "prefill")
    assert dict(p95.shares)["prefill"] == pytest.approx(10.8 / 19.3)
    # P99 (rank 99) = 4.45 s: the 2 queued ones, 8.9 s: queue 8.0, prefill 0.8, network 0.1
    p99 = got[("ttft", "p99")]
    assert (p99.requests, p99.bound, p99.dominant, p99.why_none) == (2, pytest.approx(4.45), "queue", None)
    assert dict(p99.shares) == pytest.approx({"retry": 0.0, "network": 0.1 / 8.9, "tokenization": 0.0,
                                              "queue": 8.0 / 8.9, "prefill": 0.8 / 8.9, "other": 0.0},
                                             abs=1e-9)  # fmt: skip
    # e2e (+1.0 s decode each): P99+ is 10.9 s, queue 8.0 of it; P95+ 25.3 s, prefill 10.8 of it
    assert got[("e2e", "p99")].dominant == "queue"
    assert dict(got[("e2e", "p99")].shares)["queue"] == pytest.approx(8.0 / 10.9)
    assert dict(got[("e2e", "p95")].shares)["prefill"] == pytest.approx(10.8 / 25.3)


def test_p99_needs_100_requests() -> None:
    """99 requests: the P95+ band is attributed, the P99+ band is not (it would be one request)."""
    got = {(t.metric, t.band): t for t in attribute_class("chat", samples(93))}
    assert got[("ttft", "p95")].why_none is None
    p99 = got[("ttft", "p99")]
    assert p99.shares == () and p99.bound is None and p99.requests == 99
    assert p99.why_none == "99 probe request(s) with a server view (per-request metrics or spans); 100 needed"


def test_the_verdict_says_both_bands_and_the_exporter_publishes_p99() -> None:
    v = decide(gather(Inputs("chat", END, probes=tuple(samples()))))
    assert "probes P95+ TTFT 56% prefill, e2e 43% prefill; P99+ TTFT 90% queue, e2e 73% queue" in v.reason
    registry = CollectorRegistry()
    m = BottleneckMetrics(registry)
    m.publish(v)
    shares = {
        (d["latency"], d["quantile"], d["stage"]): x
        for k, x in _page(registry)["m3mon_tail_stage_share_ratio"].items()
        if (d := dict(k))
    }
    assert {q for _, q, _ in shares} == {"p50", "p95", "p99"}
    assert shares[("ttft", "p99", "queue")] == pytest.approx(8.0 / 8.9)
    assert shares[("e2e", "p99", "queue")] == pytest.approx(8.0 / 10.9)
    # one request fewer: no P99 series at all (no number for a band of one), and the summary says so
    fewer = decide(gather(Inputs("chat", END, probes=tuple(samples(93)))))
    assert "; P99+: not enough requests (99 of 100)" in fewer.reason
    m.publish(fewer)
    page = _page(registry)["m3mon_tail_stage_share_ratio"]
    assert {dict(k)["quantile"] for k in page} == {"p50", "p95"}
