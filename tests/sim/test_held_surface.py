"""The simulator's ``/metrics`` against held pages of real vLLM, read with prometheus_client's
parser (the library vLLM renders its page with), never the monitor's (issue 26: the simulator must
not share the monitor's view of vLLM, or a sim-versus-real comparison agrees by construction).

Oracles (tests/fixtures/metrics/): ``vllm-0.13.0.metrics.txt``, rendered by vLLM 0.13.0's own
metrics code (README.md there: every family a V1 server with speculative decoding exposes), and
``vllm-0.10.0-v1-glm-4.5-partial.txt``, a real scrape's excerpt (SOURCES.md). For every family both
have: the same type, label names, HELP and histogram bucket edges. Where the simulator (vLLM 0.33)
deliberately differs, the difference is named below; any other difference fails.

The bucket edges of :mod:`monitor.vllm_buckets` are shared by the simulator and the rule generator
(``monitor.generate.promql``), so a wrong edge there would agree with itself: they are checked
against the held page directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitor import vllm_buckets
from monitor.sim.harness import running_simulator
from tests.sim.conftest import FAST, HTTP, ask

pytestmark = pytest.mark.timeout(60)

HELD = Path(__file__).resolve().parents[1] / "fixtures" / "metrics"
FULL = "vllm-0.13.0.metrics.txt"
PARTIAL = "vllm-0.10.0-v1-glm-4.5-partial.txt"
MAX_MODEL_LEN = 131072  # the held pages' max-model-len (README.md: the request-token buckets follow it)

#: Families of vLLM 0.33 (the simulator's version, docs/simulator.md) that 0.13.0 does not expose.
NEWER_THAN_0_13 = frozenset({
    "vllm:admission_rejections", "vllm:num_requests_waiting_by_reason", "vllm:prompt_tokens_by_source",
    "vllm:prompt_tokens_cached", "vllm:prompt_tokens_cached_by_source", "vllm:request_num_preemptions",
    "vllm:tool_call_parser_invocations",
})  # fmt: skip
#: Families of the 0.10.0 page removed before 0.33 (deprecated there: "DEPRECATED" in their HELP).
REMOVED_SINCE_0_10 = frozenset({"vllm:gpu_prefix_cache_hits", "vllm:gpu_prefix_cache_queries"})
#: ``vllm:cache_config_info`` carries one label per CacheConfig field, and the fields changed
#: between 0.13 and 0.33: (labels only the simulator has, labels only 0.13.0 has).
CACHE_CONFIG_ONLY_SIM = frozenset({
    "_block_size_resolved", "cache_hit_alignment_tokens", "effective_attention_block_size",
    "enable_mamba_shared_prefix_checkpoint", "hash_block_size", "kv_cache_dtype_skip_layers",
    "kv_cache_layout", "kv_cache_max_concurrency", "kv_cache_size_tokens", "mamba_cache_mode",
    "prefix_cache_retention_interval", "prefix_match_unit", "replayssm_buffer_len", "skip_page_size_padded",
    "swa_bounded_replay", "use_kda_recoverssm", "use_replayssm", "user_specified_block_size",
})  # fmt: skip
CACHE_CONFIG_ONLY_REAL = frozenset(
    {"calculate_kv_scales", "cpu_kvcache_space_bytes", "cpu_offload_gb", "swap_space"}
)


class Shape(NamedTuple):
    kind: str
    labels: frozenset[str]
    edges: tuple[str, ...]  # histogram ``le`` values in page order, +Inf last
    help: str


def shapes(text: str) -> dict[str, Shape]:
    """Family name -> shape, by prometheus_client (``*_created`` lines are gauge families of their own)."""
    out = {}
    for fam in text_string_to_metric_families(text):
        names = frozenset(k for s in fam.samples for k in s.labels) - {"le", "quantile"}
        edges = tuple(dict.fromkeys(s.labels["le"] for s in fam.samples if s.name.endswith("_bucket")))
        out[fam.name] = Shape(fam.type, names, edges, fam.documentation)
    return out


def base(name: str) -> str:
    return name.removesuffix("_created")


@pytest.fixture(scope="module")
def simulated() -> dict[str, Shape]:
    with running_simulator(max_model_len=MAX_MODEL_LEN, **FAST) as sim:
        done = HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ask("Say hi.", max_tokens=4))
        assert done.status_code == 200, done.text
        return shapes(HTTP.get(f"{sim.base_url}/metrics").text)


def held(name: str) -> dict[str, Shape]:
    return shapes((HELD / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("page", "only_sim", "only_real"), [
    (FULL, NEWER_THAN_0_13, frozenset()),
    (PARTIAL, None, REMOVED_SINCE_0_10),  # an excerpt: families it lacks say nothing
])  # fmt: skip
def test_the_same_families_as_real_vllm_apart_from_the_named_ones(
    simulated: dict[str, Shape], page: str, only_sim: frozenset[str] | None, only_real: frozenset[str]
) -> None:
    real = held(page)
    assert {base(n) for n in real.keys() - simulated.keys()} == only_real
    if only_sim is not None:
        assert {base(n) for n in simulated.keys() - real.keys()} == only_sim


@pytest.mark.parametrize("page", [FULL, PARTIAL])
def test_shared_families_have_vllms_type_labels_help_and_buckets(
    simulated: dict[str, Shape], page: str
) -> None:
    real = held(page)
    shared = sorted(real.keys() & simulated.keys())
    assert len(shared) >= (80 if page == FULL else 2)
    for name in shared:
        sim, ref = simulated[name], real[name]
        assert (sim.kind, sim.help, sim.edges) == (ref.kind, ref.help, ref.edges), name
        if name == "vllm:cache_config_info":
            assert (sim.labels - ref.labels, ref.labels - sim.labels) == (
                CACHE_CONFIG_ONLY_SIM,
                CACHE_CONFIG_ONLY_REAL,
            )
        else:
            assert sim.labels == ref.labels, name


def _edges(page: dict[str, Shape], family: str) -> tuple[float, ...]:
    edges = page[family].edges
    assert edges[-1] == "+Inf", family
    return tuple(float(e) for e in edges[:-1])


def test_the_shared_bucket_edges_are_the_held_pages() -> None:
    """The edges the simulator exposes and the rule generator checks thresholds against
    (a threshold must be an edge for an exact SLI), against the page vLLM's own code rendered."""
    real = held(FULL)
    by_constant = {
        vllm_buckets.TIME_TO_FIRST_TOKEN: ["vllm:time_to_first_token_seconds"],
        vllm_buckets.INTER_TOKEN_LATENCY: ["vllm:inter_token_latency_seconds",
                                           "vllm:request_time_per_output_token_seconds"],
        vllm_buckets.REQUEST_LATENCY: [f"vllm:{n}_seconds" for n in ("e2e_request_latency", "request_queue_time",
                                       "request_prefill_time", "request_decode_time", "request_inference_time")],
        vllm_buckets.ITERATION_TOKENS: ["vllm:iteration_tokens_total"],
        vllm_buckets.REQUEST_PARAMS_N: ["vllm:request_params_n"],
        vllm_buckets.request_tokens(MAX_MODEL_LEN): [f"vllm:{n}" for n in ("request_prompt_tokens",
            "request_generation_tokens", "request_max_num_generation_tokens", "request_params_max_tokens",
            "request_prefill_kv_computed_tokens")],
    }  # fmt: skip
    for constant, families in by_constant.items():
        for family in families:
            assert _edges(real, family) == tuple(float(e) for e in constant), family
    # REQUEST_NUM_PREEMPTIONS has no held page: vllm:request_num_preemptions is newer than 0.13.0
    assert "vllm:request_num_preemptions" in NEWER_THAN_0_13 and "vllm:request_num_preemptions" not in real
