"""``--kv-cache-metrics``: the simulator serves vLLM's kv_block_* residency histograms.

Checked against vLLM's definitions (``kv_cache_metrics.py``, ``loggers.py``; cited in
tests/fixtures/metrics/SOURCES.md): vLLM's buckets, one lifetime and one idle observation per
evicted sampled block, at most 3 reuse gaps per evicted block (a ring of 4 accesses), lifetime
never shorter than idle time; and without the flag the families are absent.
"""

from __future__ import annotations

import math

import openai
from prometheus_client.parser import text_string_to_metric_families

from monitor.scrape.collector import read_text
from monitor.scrape.interval import signals
from monitor.sim.harness import running_simulator
from tests.sim.conftest import FAST, HTTP, MODEL

VLLM_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300,
                600, 1200, 1800, math.inf]  # fmt: skip
FAMILIES = ("vllm:kv_block_lifetime_seconds", "vllm:kv_block_idle_before_evict_seconds",
            "vllm:kv_block_reuse_gap_seconds")  # fmt: skip


def ask(client: openai.OpenAI, head: str) -> None:
    prompt = f"{head} " + " ".join(f"w{i}" for i in range(700))  # several 128-token blocks
    client.chat.completions.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": prompt}])


def test_residency_histograms_follow_evictions() -> None:
    with running_simulator(kv_blocks=24, kv_cache_metrics=True, kv_cache_metrics_sample=1.0, **FAST) as sim:
        client = openai.OpenAI(base_url=f"{sim.base_url}/v1", api_key="x", max_retries=0, timeout=30)
        for head in ("alpha", "alpha", "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"):
            ask(client, head)
        client.close()
        text = HTTP.get(f"{sim.base_url}/metrics").text
    hists = {f.name: f for f in text_string_to_metric_families(text) if f.name in FAMILIES}
    assert sorted(hists) == sorted(FAMILIES)
    counts = {}
    for name, fam in hists.items():
        edges = [float(s.labels["le"]) for s in fam.samples if s.name.endswith("_bucket")]
        assert edges == VLLM_BUCKETS
        counts[name] = next(s.value for s in fam.samples if s.name.endswith("_count"))
    evicted = counts["vllm:kv_block_lifetime_seconds"]
    assert evicted > 0 and counts["vllm:kv_block_idle_before_evict_seconds"] == evicted
    assert 0 < counts["vllm:kv_block_reuse_gap_seconds"] <= 3 * evicted
    res = signals("sim", read_text(text, 1.0), None).total.kv_residency
    assert res is not None and res.evicted_blocks == evicted
    assert res.lifetime_p50 is not None and res.idle_before_evict_p50 is not None
    assert res.lifetime_p50 >= res.idle_before_evict_p50


def test_no_residency_families_without_the_flag(sim: object) -> None:
    text = HTTP.get(f"{sim.base_url}/metrics").text
    assert not any(name in text for name in FAMILIES)
