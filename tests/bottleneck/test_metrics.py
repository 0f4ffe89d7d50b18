"""The verdict's series: a state set per class (exactly one verdict at 1), each named cause's
seconds, shares only for attributed bands, and nothing left behind when a verdict changes or a
class is reloaded away."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.inputs import Inputs, Objectives, ProbeRun
from monitor.bottleneck.metrics import BottleneckMetrics
from monitor.bottleneck.rules import VERDICTS, decide
from monitor.bottleneck.tail import SOURCE_METRICS, Sample

END = 10_000.0


def _page(registry: CollectorRegistry) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _slow_proxy(n: int) -> Inputs:
    parts = {"network": 1.0, "queue": 0.01, "prefill": 0.2, "decode": 2.0}
    probes = tuple(Sample("chat", END - 800 + 20 * k, parts, SOURCE_METRICS, 1.21, 3.21) for k in range(n))
    return Inputs("chat", END, objectives=Objectives(2.5, 30.0), probes=probes,
                  runs=tuple(ProbeRun(p.at + 4) for p in probes))  # fmt: skip


def test_a_state_set_per_class_and_no_stale_shares() -> None:
    registry = CollectorRegistry()
    m = BottleneckMetrics(registry)
    m.publish(decide(gather(_slow_proxy(30))))
    page = _page(registry)
    states = {dict(k)["verdict"]: v for k, v in page["m3mon_bottleneck_verdict"].items()}
    assert set(states) == set(VERDICTS) and [k for k, v in states.items() if v == 1] == ["proxy_bound"]
    causes = {
        (dict(k)["verdict"], dict(k)["source"]): v for k, v in page["m3mon_bottleneck_cause_seconds"].items()
    }
    assert causes == {("proxy_bound", "probes"): 1.0}
    shares = page["m3mon_tail_stage_share_ratio"]
    assert {dict(k)["quantile"] for k in shares} == {"p95", "p50"} and len(shares) == 2 * (6 + 8)
    m.publish(decide(gather(_slow_proxy(2))))  # the window emptied: insufficient, no shares, no causes
    page = _page(registry)
    assert "m3mon_tail_stage_share_ratio" not in page and "m3mon_bottleneck_cause_seconds" not in page
    held = [dict(k)["verdict"] for k, v in page["m3mon_bottleneck_verdict"].items() if v == 1]
    assert held == ["insufficient_evidence"]
    m.forget("chat")
    assert "m3mon_bottleneck_verdict" not in _page(registry)
