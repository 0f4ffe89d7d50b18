"""The verdict's series: a state set per class (exactly one verdict at 1), shares only for attributed
bands, and nothing left behind when a verdict changes or a class is reloaded away."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor.bottleneck.metrics import BottleneckMetrics
from monitor.bottleneck.rules import VERDICTS, decide
from tests.bottleneck.test_rules import ev


def _page(registry: CollectorRegistry) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_a_state_set_per_class_and_no_stale_shares() -> None:
    registry = CollectorRegistry()
    m = BottleneckMetrics(registry)
    m.publish(decide(ev("queue", "decode", sm_active=0.3)))
    page = _page(registry)
    states = {dict(k)["verdict"]: v for k, v in page["m3mon_bottleneck_verdict"].items()}
    assert set(states) == set(VERDICTS) and [k for k, v in states.items() if v == 1] == ["scheduler_bound"]
    shares = page["m3mon_tail_stage_share_ratio"]
    assert {dict(k)["quantile"] for k in shares} == {"p95"} and len(shares) == 6 + 8  # TTFT and e2e stages
    m.publish(decide(ev(None, None)))  # the window emptied: unknown, and no shares left
    page = _page(registry)
    assert "m3mon_tail_stage_share_ratio" not in page
    assert [dict(k)["verdict"] for k, v in page["m3mon_bottleneck_verdict"].items() if v == 1] == ["unknown"]
    m.forget("chat")
    assert "m3mon_bottleneck_verdict" not in _page(registry)
