"""The floors and the evidence each cause needs (docs/bottleneck.md), on hand-built windows: what
the issue measured the old rules getting wrong, each with the numbers it gave.

The oracle is the documented definition: a stage is a cause when it takes at least a quarter of
the class's objective in enough requests, one of them recent; the KV cache only with sustained
pressure; the application before the proxy for a class with tool loops.
"""

from __future__ import annotations

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.inputs import Inputs, Objectives, PoolPoint, ProbeRun
from monitor.bottleneck.rules import decide
from monitor.bottleneck.tail import SOURCE_METRICS, SOURCE_SPANS, Sample, attribute_class

END = 10_000.0


def _probe(k: int, n: int, **parts: float) -> Sample:
    stages = {"network": 0.02, "queue": 0.01, "prefill": 0.25, "decode": 3.0, **parts}
    ttft = sum(v for s, v in stages.items() if s in ("retry", "network", "queue", "prefill"))
    e2e = ttft + stages["decode"] + stages.get("tool_turnaround", 0.0)
    return Sample("chat", END - 890 + k * 880 / n, stages, SOURCE_METRICS, ttft, e2e)


def _inputs(probes: list[Sample], **kw: object) -> Inputs:
    base: dict[str, object] = {"request_class": "chat", "end": END, "objectives": Objectives(2.5, 30.0),
                               "probes": tuple(probes), "runs": tuple(ProbeRun(p.at + 5) for p in probes)}  # fmt: skip
    return Inputs(**{**base, **kw})  # type: ignore[arg-type]


def test_outlier_probes_under_a_loose_objective_name_nothing() -> None:
    """The issue's healthy pool named proxy-bound: 3 probes of 40 at 150-230 ms of network, a
    2.5 s TTFT objective. The old rules called it proxy_bound."""
    probes = [_probe(k, 40, network=0.15 + 0.04 * (k % 3) if k in (5, 17, 33) else 0.02) for k in range(40)]
    v = decide(gather(_inputs(probes)))
    assert v.verdict == "none", v.reason


def test_a_slow_proxy_is_named_with_its_seconds_and_source() -> None:
    probes = [_probe(k, 40, network=0.9) for k in range(40)]
    v = decide(gather(_inputs(probes)))
    assert (v.verdict, v.stage) == ("proxy_bound", "frontend"), v.reason
    assert v.causes[0].seconds >= 0.9 and v.sources == ("probes",)


def test_one_preemption_with_the_cache_full_is_not_cache_pressure() -> None:
    """One preemption in the window and a queue: the old rules said cache_bound."""
    probes = [_probe(k, 40, queue=1.5) for k in range(40)]
    pool = tuple(PoolPoint("ep", END - 300 + 15 * k, 20, waiting=3, running=30, kv_usage=0.95,
                           preemptions=1.0 if k == 10 else 0.0) for k in range(1, 21))  # fmt: skip
    v = decide(gather(_inputs(probes, pool=pool)))
    assert v.verdict == "queue_bound", v.reason  # no GPU exporter: the queue, not the cache
    assert all(c.verdict != "cache_bound" for c in v.causes)


def test_sustained_preemptions_with_the_cache_full_are() -> None:
    probes = [_probe(k, 40, queue=1.5) for k in range(40)]
    pool = tuple(PoolPoint("ep", END - 300 + 15 * k, 20, waiting=3, running=30, kv_usage=0.95,
                           preemptions=2.0 if k % 4 == 0 else 0.0) for k in range(1, 21))  # fmt: skip
    v = decide(gather(_inputs(probes, pool=pool)))
    assert v.verdict == "cache_bound", v.reason


def test_tool_turnaround_is_the_application_not_the_proxy() -> None:
    """An agent class waiting 3 x 0.8 s on its tools with a fast engine: the old rules said
    proxy_bound (the proxy rule was checked first)."""
    probes = [_probe(k, 40, tool_turnaround=0.15, network=0.05) for k in range(40)]
    probes = [Sample(p.request_class, p.at, p.parts, p.view, p.ttft, (p.e2e or 0.0) + 2.4) for p in probes]
    v = decide(gather(_inputs(probes, tools=True, objectives=Objectives(2.5, 8.0))))
    assert v.verdict == "application_bound" and v.stage == "application", v.reason
    assert [c.verdict for c in v.causes] == ["application_bound"]


def test_a_cause_clears_once_the_recent_window_has_none_of_it() -> None:
    """A proxy delay that stopped 6 minutes ago: still in the 15-minute tail, named no more."""
    probes = [_probe(k, 40, network=0.9 if k < 22 else 0.02) for k in range(40)]
    assert all(p.parts["network"] < 0.1 for p in probes if p.at > END - 300)
    v = decide(gather(_inputs(probes)))
    assert v.verdict == "none", v.reason


def test_no_share_is_ever_negative() -> None:
    """Spans whose arrival-to-queued part comes out below zero (the first token's trip back, two
    clocks): the shares count it 0 and ``other`` never goes below 0."""
    samples = [Sample("chat", float(k), {"network": 0.02, "tokenization": -0.11, "queue": 0.3, "prefill": 0.2},
                      SOURCE_SPANS, 0.45, 2.0) for k in range(30)]  # fmt: skip
    for share in attribute_class("chat", samples):
        assert all(v >= 0 for _, v in share.shares), share


def test_the_queue_is_read_from_the_server_while_probes_starve() -> None:
    """Probes stuck behind the queue: 6 answered in 15 minutes, fewer than the tail needs. The
    old rules said unknown; the server's gauges show the queue."""
    probes = [_probe(k, 6) for k in range(6)]  # answered before the queue formed
    pool = tuple(PoolPoint("ep", END - 300 + 15 * k, 0, waiting=5.0 * k, running=64) for k in range(1, 21))
    v = decide(gather(_inputs(probes, pool=pool)))
    assert v.verdict == "queue_bound", v.reason
    assert v.sources == ("server gauges",)
