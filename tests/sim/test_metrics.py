"""/metrics against the vLLM 0.33.0 reference: families, types, labels, HELP, buckets, movement."""

from __future__ import annotations

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitor.sim.harness import SimHandle
from tests.sim.conftest import HTTP, MODEL, samples, value

pytestmark = pytest.mark.timeout(60)

L = {"model_name", "engine"}
#: vLLM 0.33.0 V1 families (exposed base name -> type, label names) from vllm-surface.md §2.
EXPECTED = {
    "vllm:num_requests_running": ("gauge", L),
    "vllm:num_requests_waiting": ("gauge", L),
    "vllm:num_requests_waiting_by_reason": ("gauge", L | {"reason"}),
    "vllm:engine_sleep_state": ("gauge", L | {"sleep_state"}),
    "vllm:kv_cache_usage_perc": ("gauge", L),
    "vllm:prefix_cache_queries": ("counter", L),
    "vllm:prefix_cache_hits": ("counter", L),
    "vllm:external_prefix_cache_queries": ("counter", L),
    "vllm:external_prefix_cache_hits": ("counter", L),
    "vllm:mm_cache_queries": ("counter", L),
    "vllm:mm_cache_hits": ("counter", L),
    "vllm:num_preemptions": ("counter", L),
    "vllm:prompt_tokens": ("counter", L),
    "vllm:prompt_tokens_by_source": ("counter", L | {"source"}),
    "vllm:prompt_tokens_cached": ("counter", L),
    "vllm:prompt_tokens_cached_by_source": ("counter", L | {"source"}),
    "vllm:generation_tokens": ("counter", L),
    "vllm:request_success": ("counter", L | {"finished_reason"}),
    "vllm:admission_rejections": ("counter", {"model_name", "reason"}),
    "vllm:request_prompt_tokens": ("histogram", L),
    "vllm:request_generation_tokens": ("histogram", L),
    "vllm:iteration_tokens_total": ("histogram", L),
    "vllm:request_max_num_generation_tokens": ("histogram", L),
    "vllm:request_params_n": ("histogram", L),
    "vllm:request_params_max_tokens": ("histogram", L),
    "vllm:time_to_first_token_seconds": ("histogram", L),
    "vllm:inter_token_latency_seconds": ("histogram", L),
    "vllm:request_time_per_output_token_seconds": ("histogram", L),
    "vllm:e2e_request_latency_seconds": ("histogram", L),
    "vllm:request_queue_time_seconds": ("histogram", L),
    "vllm:request_inference_time_seconds": ("histogram", L),
    "vllm:request_prefill_time_seconds": ("histogram", L),
    "vllm:request_decode_time_seconds": ("histogram", L),
    "vllm:request_num_preemptions": ("histogram", L),
    "vllm:request_prefill_kv_computed_tokens": ("histogram", L),
    "vllm:cache_config_info": ("gauge", None),
    "vllm:spec_decode_num_drafts": ("counter", L),
    "vllm:spec_decode_num_draft_tokens": ("counter", L),
    "vllm:spec_decode_num_accepted_tokens": ("counter", L),
    "vllm:spec_decode_num_accepted_tokens_per_pos": ("counter", L | {"position"}),
    "vllm:tool_call_parser_invocations": ("counter", {"model_name", "mode", "outcome", "request_type"}),
    "http_requests": ("counter", {"handler", "method", "status"}),
    "http_request_size_bytes": ("summary", {"handler"}),
    "http_response_size_bytes": ("summary", {"handler"}),
    "http_request_duration_highr_seconds": ("histogram", set()),
    "http_request_duration_seconds": ("histogram", {"handler", "method"}),
}
HELP = {
    "vllm:num_requests_running": "Number of requests in model execution batches.",
    "vllm:kv_cache_usage_perc": "KV-cache usage. 1 means 100 percent usage.",
    "vllm:request_success": "Count of successfully processed requests.",
    "vllm:e2e_request_latency_seconds": "Histogram of e2e request latency in seconds.",
    "vllm:iteration_tokens_total": "Histogram of number of tokens per engine_step.",
    "vllm:cache_config_info": "Information of the LLMEngine CacheConfig",
    "vllm:request_queue_time_seconds": "Histogram of time spent in WAITING phase for request.",
}
BUCKETS = {
    "vllm:e2e_request_latency_seconds": "0.3 0.5 0.8 1.0 1.5 2.0 2.5 5.0 10.0 15.0 20.0 30.0 40.0 50.0 60.0 "
    "120.0 240.0 480.0 960.0 1920.0 7680.0",
    "vllm:time_to_first_token_seconds": "0.001 0.005 0.01 0.02 0.04 0.06 0.08 0.1 0.25 0.5 0.75 1.0 2.5 5.0 "
    "7.5 10.0 20.0 40.0 80.0 160.0 640.0 2560.0",
    "vllm:inter_token_latency_seconds": "0.01 0.025 0.05 0.075 0.1 0.15 0.2 0.3 0.4 0.5 0.75 1.0 2.5 5.0 7.5 "
    "10.0 20.0 40.0 80.0",
    "vllm:iteration_tokens_total": "1.0 8.0 16.0 32.0 64.0 128.0 256.0 512.0 1024.0 2048.0 4096.0 8192.0 16384.0",
    "vllm:request_params_n": "1.0 2.0 5.0 10.0 20.0",
    "vllm:request_num_preemptions": "1.0 2.0 3.0 4.0 5.0 10.0 20.0",
    "vllm:request_prompt_tokens": "1.0 2.0 5.0 10.0 20.0 50.0 100.0 200.0 500.0 1000.0 2000.0 5000.0 10000.0 "
    "20000.0 50000.0 100000.0",
    "http_request_duration_seconds": "0.1 0.5 1.0",
}


def _families(base_url: str) -> dict[str, object]:
    text = HTTP.get(f"{base_url}/metrics").text
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_families_types_labels_help(sim: SimHandle) -> None:
    fams = _families(sim.base_url)
    for name, (kind, labels) in EXPECTED.items():
        fam = fams[name]
        assert fam.type == kind, name  # type: ignore[attr-defined]
        if labels is not None:
            for s in fam.samples:  # type: ignore[attr-defined]
                if s.name.endswith(("_bucket", "_count", "_sum", "_total")) or s.name == name:
                    assert set(s.labels) - {"le", "quantile"} == labels, (name, s)
    for name, text in HELP.items():
        assert fams[name].documentation == text  # type: ignore[attr-defined]
    for name in ("vllm:prompt_tokens_created", "process_start_time_seconds", "python_info"):
        assert name in fams


def test_buckets_le_rendering(sim: SimHandle) -> None:
    HTTP.get(f"{sim.base_url}/v1/models")
    raw = HTTP.get(f"{sim.base_url}/metrics").text
    assert 'le="1.0"' in raw and 'le="2560.0"' in raw and 'le="+Inf"' in raw
    assert "# TYPE vllm:iteration_tokens_total histogram" in raw
    assert "# TYPE vllm:prompt_tokens_created gauge" in raw
    fams = _families(sim.base_url)
    for name, want in BUCKETS.items():
        les = [s.labels["le"] for s in fams[name].samples if s.name.endswith("_bucket")]  # type: ignore[attr-defined]
        assert les[:-1] == want.split() and les[-1] == "+Inf", name


def test_cache_config_info_and_children(sim: SimHandle) -> None:
    s = samples(sim.base_url)
    info = [dict(lab) for (n, lab), v in s.items() if n == "vllm:cache_config_info" and v == 1.0]
    assert len(info) == 1
    assert info[0]["block_size"] == "128" and info[0]["engine"] == "0" and "model_name" not in info[0]
    assert info[0]["enable_prefix_caching"] == "True" and info[0]["num_gpu_blocks"] == "8192"
    for key in ("cache_dtype", "gpu_memory_utilization", "kv_cache_size_tokens"):
        assert key in info[0]
    reasons = {dict(lab)["finished_reason"] for (n, lab) in s if n == "vllm:request_success_total"}
    assert reasons == {"stop", "length", "abort", "error", "repetition"}
    assert value(sim.base_url, "vllm:engine_sleep_state", sleep_state="awake") == 1.0


def test_counters_move_with_requests(sim: SimHandle, client: openai.OpenAI) -> None:
    before = samples(sim.base_url)
    prompt = completion = 0
    n = 5
    for i in range(n):
        r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"Question {i}"}],
                                           max_tokens=200)  # fmt: skip
        assert r.usage is not None
        prompt += r.usage.prompt_tokens
        completion += r.usage.completion_tokens
    stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "short"}],
                                            stream=True, stream_options={"include_usage": True}, max_tokens=3)  # fmt: skip
    last = list(stream)[-1]
    assert last.usage is not None
    prompt += last.usage.prompt_tokens
    completion += last.usage.completion_tokens
    after = samples(sim.base_url)
    lab = (("engine", "0"), ("model_name", MODEL))

    def delta(name: str, labels: tuple[tuple[str, str], ...] = lab) -> float:
        return after.get((name, labels), 0.0) - before.get((name, labels), 0.0)

    assert (
        delta(
            "vllm:request_success_total",
            (("engine", "0"), ("finished_reason", "stop"), ("model_name", MODEL)),
        )
        == n
    )
    assert (
        delta(
            "vllm:request_success_total",
            (("engine", "0"), ("finished_reason", "length"), ("model_name", MODEL)),
        )
        == 1
    )
    assert delta("vllm:prompt_tokens_total") == prompt
    assert delta("vllm:generation_tokens_total") == completion
    assert delta("vllm:e2e_request_latency_seconds_count") == n + 1
    assert delta("vllm:time_to_first_token_seconds_count") == n + 1
    assert delta("vllm:request_generation_tokens_sum") == completion
    assert delta("vllm:request_params_max_tokens_count") == n + 1
    http = (("handler", "/v1/chat/completions"), ("method", "POST"), ("status", "2xx"))
    assert delta("http_requests_total", http) == n + 1
    assert delta("vllm:spec_decode_num_draft_tokens_total") == 3 * delta("vllm:spec_decode_num_drafts_total")
    assert after[("vllm:num_requests_running", lab)] == 0.0


def test_openmetrics_negotiation(sim: SimHandle) -> None:
    r = HTTP.get(f"{sim.base_url}/metrics", headers={"Accept": "application/openmetrics-text"})
    assert r.headers["content-type"].startswith("application/openmetrics-text")
    assert r.text.rstrip().endswith("# EOF")
    assert HTTP.get(f"{sim.base_url}/metrics").headers["content-type"].startswith("text/plain; version=0.0.4")
