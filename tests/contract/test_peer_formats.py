"""Peer result files read to the numbers in them (docs/contract.md, *Peer results as evidence*).

Every fixture in tests/fixtures/peers was written by the real tool against the project's simulator
(tests/fixtures/peers/SOURCES.md). The oracles read the files' own fields with ``json`` and
``statistics``, independently of the importer — and, where the tool also wrote its own aggregate of
the same values (vLLM's ``p99_ttft_ms``, GuideLLM's percentiles), the importer's per-request values
must reproduce that aggregate under the tool's own percentile definition.
"""

from __future__ import annotations

import json
import math
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.peers.detect import read_peer_file
from monitor.contract.peers.model import LINEAR, NEAREST

PEERS = Path(__file__).parent.parent / "fixtures" / "peers"


def _doc(name: str) -> Any:
    return json.loads((PEERS / name).read_text())


def linear(values: list[float], p: float) -> float:
    """``numpy.percentile``'s default (linear between order statistics)."""
    if p == 100:
        return max(values)
    return statistics.quantiles(values, n=1000, method="inclusive")[round(p * 10) - 1]


def nearest(values: list[float], p: float) -> float:
    """Inverse empirical CDF: the first value whose cumulative share reaches p."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def test_vllm_bench_detailed() -> None:
    d = _doc("vllm-bench-rate4-detailed.json")
    (run,) = read_peer_file(str(PEERS / "vllm-bench-rate4-detailed.json")).runs
    ok = [i for i, e in enumerate(d["errors"]) if e == ""]
    assert (run.tool, run.completed, run.failed) == ("vllm bench serve", d["completed"], d["failed"])
    assert (run.load_kind, run.load_value) == ("rate", d["request_rate"])
    ended = datetime.strptime(d["date"], "%Y%m%d-%H%M%S").timestamp()
    assert run.started_at == pytest.approx(ended - d["duration"]) and run.duration == d["duration"]
    assert run.samples["ttft"] == [d["ttfts"][i] for i in ok]
    assert run.samples["e2e"] == [d["latencies"][i] for i in ok]
    assert run.samples["stall"] == [max(d["itls"][i]) for i in ok]
    tpot = [(d["latencies"][i] - d["ttfts"][i]) / (d["output_lens"][i] - 1) for i in ok]
    assert run.samples["tpot"] == pytest.approx(tpot)
    # vLLM's own aggregates of the same per-request values (numpy.percentile, linear):
    assert linear(run.samples["ttft"], 99) * 1000 == pytest.approx(d["p99_ttft_ms"])
    assert statistics.fmean(run.samples["tpot"]) * 1000 == pytest.approx(d["mean_tpot_ms"])
    assert run.output_tokens == d["total_output_tokens"] / d["completed"]
    # m3mon's per-token ITL: each chunk gap split over the request's mean tokens per chunk.
    expected = sum(
        max(1, round(d["output_lens"][i] / (len(d["itls"][i]) + 1))) * len(d["itls"][i]) for i in ok
    )
    assert len(run.samples["itl"]) == expected
    assert sum(run.samples["itl"]) == pytest.approx(sum(sum(d["itls"][i]) for i in ok), rel=0.2)


def test_vllm_bench_without_save_detailed_gives_quantiles() -> None:
    d = _doc("vllm-bench-concurrency4.json")
    (run,) = read_peer_file(str(PEERS / "vllm-bench-concurrency4.json")).runs
    assert (run.load_kind, run.load_value) == ("concurrency", d["max_concurrency"])
    ttft = run.quantiles["ttft"]
    assert (ttft.count, ttft.method) == (d["completed"], LINEAR)
    assert ttft.points == {p: d[f"p{p:g}_ttft_ms"] / 1000 for p in (50.0, 90.0, 95.0, 99.0)}
    assert run.quantiles["tpot"].count is None and run.quantiles["itl"].count is None  # shown, never judged
    assert "ttft" not in run.samples and run.samples["e2e"] == d["latencies"]  # no failures: all completed


def test_vllm_bench_all_failed() -> None:
    (run,) = read_peer_file(str(PEERS / "vllm-bench-all-failed.json")).runs
    d = _doc("vllm-bench-all-failed.json")
    assert (run.completed, run.failed) == (0, d["failed"]) == (0, 8)
    assert run.samples == {} and run.quantiles["ttft"].count == 0


def test_guidellm_report() -> None:
    d = _doc("guidellm-rate4.json")
    (b,) = d["benchmarks"]
    (run,) = read_peer_file(str(PEERS / "guidellm-rate4.json")).runs
    totals = b["metrics"]["request_totals"]
    assert (run.tool, run.version) == ("GuideLLM", d["metadata"]["guidellm_version"])
    assert (run.completed, run.failed, run.incomplete) == (totals["successful"], totals["errored"],
                                                           totals["incomplete"])  # fmt: skip
    assert (run.load_kind, run.load_value, run.started_at) == ("rate", b["config"]["strategy"]["rate"],
                                                               b["start_time"])  # fmt: skip
    reqs = b["requests"]["successful"]
    assert run.samples["ttft"] == pytest.approx([r["time_to_first_token_ms"] / 1000 for r in reqs])
    assert run.samples["e2e"] == [r["request_latency"] for r in reqs]
    # GuideLLM's own aggregates of the same values (inverse-CDF percentiles):
    ttft = b["metrics"]["time_to_first_token_ms"]["successful"]
    for key, p in (("p50", 50), ("p95", 95), ("p99", 99)):
        assert nearest(run.samples["ttft"], p) * 1000 == pytest.approx(ttft["percentiles"][key])
    assert run.quantiles["ttft"].method == NEAREST and run.quantiles["ttft"].count == ttft["count"]
    assert "itl" not in run.samples and "itl" not in run.quantiles  # no per-token ITL in the report


def test_aiperf_profile_export() -> None:
    d = _doc("aiperf-rate4-profile_export_aiperf.json")
    (run,) = read_peer_file(str(PEERS / "aiperf-rate4-profile_export_aiperf.json")).runs
    assert (run.tool, run.version, run.samples) == ("AIPerf", d["aiperf_version"], {})
    assert run.completed == d["request_count"]["avg"] and run.failed == 0
    assert run.started_at == datetime.fromisoformat(d["start_time"]).timestamp()
    assert run.duration == d["benchmark_duration"]["avg"]
    assert (run.load_kind, run.load_value) == ("rate", d["input_config"]["phases"][0]["rate"])
    for metric, key in (("ttft", "time_to_first_token"), ("e2e", "request_latency")):
        q, m = run.quantiles[metric], d[key]
        assert (q.count, q.method) == (m["count"], LINEAR) and q.maximum == pytest.approx(m["max"] / 1000)
        want = {float(k[1:]): v / 1000 for k, v in m.items() if k[:1] == "p" and k[1:].isdigit()}
        assert q.points == pytest.approx(want) and len(want) == 9
    # counted with the client tokenizer (no --use-server-token-count): shown, not judged
    assert run.quantiles["tpot"].count is None
    assert run.output_tokens == d["usage_completion_tokens"]["avg"]


def test_guidellm_sweep_with_sampled_requests_gives_quantiles_per_benchmark() -> None:
    d = _doc("guidellm-concurrent-sweep-sampled.json")
    runs = read_peer_file(str(PEERS / "guidellm-concurrent-sweep-sampled.json")).runs
    assert [(r.load_kind, r.load_value) for r in runs] == [("concurrency", 1.0), ("concurrency", 2.0)]
    for run, b in zip(runs, d["benchmarks"], strict=True):
        totals = b["metrics"]["request_totals"]
        assert len(b["requests"]["successful"]) < totals["successful"] == run.completed  # sampled
        assert run.samples == {} and run.basis == "quantiles only"
        e2e = b["metrics"]["request_latency"]["successful"]
        assert run.quantiles["e2e"].count == e2e["count"] and run.quantiles["e2e"].maximum == e2e["max"]
        assert run.quantiles["e2e"].points[95.0] == e2e["percentiles"]["p95"]
        assert run.quantiles["ttft"].points[99.9] == b["metrics"]["time_to_first_token_ms"]["successful"][
            "percentiles"]["p999"] / 1000  # fmt: skip
