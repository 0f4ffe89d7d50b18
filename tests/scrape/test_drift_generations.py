"""The drift guard on real pages of every generation the fixtures hold, against a table written
from vLLM's documented metric history (the shared reference's presence matrix and renames
timeline, /work/shared/reference/vllm-surface.md §2.3, §3.1, §3.2), not from the monitor's own name
map or its history module.

For each page: the status the guard must give each family a consumer may read. The expectations
below were written by reading the reference, family by family, for the page's vLLM release:

* 0.8.5 (V1): ``inter_token_latency_seconds`` appears in 0.10.2 and this release serves the older
  ``time_per_output_token_seconds`` (renamed); ``kv_cache_usage_perc`` and the prefix-cache
  counters appear in 0.9.2, the older ``gpu_`` names are served (renamed);
  ``request_time_per_output_token_seconds`` is 0.11+ with no predecessor (absent);
  ``finished_reason="error"`` is 0.13+ (label); KV residency needs ``--kv-cache-metrics`` (flag).
* 0.13.0: ``time_per_output_token_seconds`` is hidden from 0.12 and ``inter_token_latency_seconds``
  is served (removed, replacement named); ``gpu_cache_usage_perc`` is removed in 0.12 (removed);
  the new names are served; ``error`` is served.
* SGLang 0.5.23: the ``sglang:`` families SGLang's collector registers (§5).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.scrape.drift import Need, assess, surface
from monitor.scrape.page import parse

PAGES = Path(__file__).resolve().parent.parent / "fixtures" / "metrics"

# family -> status, per page (written from the reference; see the module docstring)
EXPECTED: dict[str, dict[str, str]] = {
    "vllm-0.8.5.metrics.txt": {
        "vllm:time_to_first_token_seconds": "served",
        "vllm:e2e_request_latency_seconds": "served",
        "vllm:request_queue_time_seconds": "served",
        "vllm:request_prefill_time_seconds": "served",
        "vllm:inter_token_latency_seconds": "renamed",
        "vllm:kv_cache_usage_perc": "renamed",
        "vllm:prefix_cache_hits_total": "renamed",
        "vllm:prefix_cache_queries_total": "renamed",
        "vllm:request_time_per_output_token_seconds": "absent",
        "vllm:request_success_total": "label",
        "vllm:kv_block_lifetime_seconds": "flag",
        "vllm:spec_decode_num_drafts_total": "served",
    },
    "vllm-0.13.0.metrics.txt": {
        "vllm:time_to_first_token_seconds": "served",
        "vllm:inter_token_latency_seconds": "served",
        "vllm:time_per_output_token_seconds": "removed",
        "vllm:gpu_cache_usage_perc": "removed",
        "vllm:gpu_prefix_cache_hits_total": "removed",
        "vllm:kv_cache_usage_perc": "served",
        "vllm:request_time_per_output_token_seconds": "served",
        "vllm:request_success_total": "served",
    },
    "sglang-0.5.23.metrics.txt": {
        "sglang:time_to_first_token_seconds": "served",
        "sglang:inter_token_latency_seconds": "served",
        "sglang:num_queue_reqs": "served",
        "sglang:token_usage": "served",
        "sglang:cache_hit_rate": "served",
    },
}
#: the family the page serves instead (the reference's renames timeline)
REPLACEMENT = {
    ("vllm-0.8.5.metrics.txt", "vllm:inter_token_latency_seconds"): "vllm:time_per_output_token_seconds",
    ("vllm-0.8.5.metrics.txt", "vllm:kv_cache_usage_perc"): "vllm:gpu_cache_usage_perc",
    ("vllm-0.13.0.metrics.txt", "vllm:time_per_output_token_seconds"): "vllm:inter_token_latency_seconds",
    ("vllm-0.13.0.metrics.txt", "vllm:gpu_cache_usage_perc"): "vllm:kv_cache_usage_perc",
}


@pytest.mark.parametrize("page_name", sorted(EXPECTED))
def test_each_generation_gets_the_documented_status(page_name: str) -> None:
    page = surface(parse((PAGES / page_name).read_text(), partial=True))
    wanted = EXPECTED[page_name]
    needs = [Need(f, (f"a panel reading {f} alone",)) for f in wanted]
    got = {d.family: d for d in assess("pool", needs, page)}
    assert {f: d.status for f, d in got.items()} == wanted
    for (name, family), older in REPLACEMENT.items():
        if name == page_name:
            assert got[family].replacement == older


def test_a_hidden_family_names_the_flag_that_shows_it_again() -> None:
    page = surface(parse((PAGES / "vllm-0.13.0.metrics.txt").read_text(), partial=True))
    (d,) = assess("pool", [Need("vllm:time_per_output_token_seconds", ("x",))], page)
    # hidden in 0.12 (reference §3.2): --show-hidden-metrics-for-version=0.11 re-enables it
    assert "--show-hidden-metrics-for-version=0.11" in d.detail and "removed in 0.20" in d.detail


def test_a_page_with_no_engine_families_says_so() -> None:
    text = "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.0\n"
    (d,) = assess("pool", [Need("vllm:num_requests_running", ("x",))], surface(parse(text)))
    assert d.status == "absent" and "--disable-log-stats" in d.detail


def test_a_reader_of_both_names_is_served_by_either() -> None:
    # the engine dashboard reads `kv_cache_usage_perc or gpu_cache_usage_perc`: on 0.8.5 the old name
    # serves it; a panel reading only the new name is still told it was renamed
    page = surface(parse((PAGES / "vllm-0.8.5.metrics.txt").read_text(), partial=True))
    both, alone = "dashboard engine", "alert KV"
    needs = [Need("vllm:kv_cache_usage_perc", (both,)), Need("vllm:gpu_cache_usage_perc", (both,)),
             Need("vllm:inter_token_latency_seconds", (alone,))]  # fmt: skip
    got = {d.family: d.status for d in assess("pool", needs, page)}
    assert got == {"vllm:kv_cache_usage_perc": "served", "vllm:gpu_cache_usage_perc": "served",
                   "vllm:inter_token_latency_seconds": "renamed"}  # fmt: skip
