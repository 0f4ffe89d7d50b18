"""The engine behaves like a scheduler: prefix caching, queueing, KV pressure and preemption."""

from __future__ import annotations

import concurrent.futures as cf
import itertools

import httpx
import pytest

from monitor.sim.harness import running_simulator
from monitor.sim.kvcache import KVPool
from tests.sim.conftest import FAST, HTTP, ask, value

pytestmark = pytest.mark.timeout(60)

SHARED = "You are a careful assistant. " + "Context line about the deployment and its history. " * 120


def test_prefix_cache_hits_reduce_prefill() -> None:
    with running_simulator(prefill_tps=20000.0, decode_itl=0.002, jitter=0.0) as sim:
        url = f"{sim.base_url}/v1/chat/completions"
        first = HTTP.post(url, json={**ask("q1"), "messages": [{"role": "system", "content": SHARED},
                                                                 {"role": "user", "content": "first?"}]}).json()  # fmt: skip
        second = HTTP.post(url, json={**ask("q2"), "messages": [{"role": "system", "content": SHARED},
                                                                  {"role": "user", "content": "second?"}]}).json()  # fmt: skip
        assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        assert cached > 0 and cached % 128 == 0 and cached < second["usage"]["prompt_tokens"]
        assert value(sim.base_url, "vllm:prefix_cache_hits_total") == cached
        queries = value(sim.base_url, "vllm:prefix_cache_queries_total")
        assert queries == first["usage"]["prompt_tokens"] + second["usage"]["prompt_tokens"]
        truth = {r["id"]: r for r in sim.truth()["requests"]}
        prefill = [
            truth[b["id"]]["first_token"]["mono"] - truth[b["id"]]["scheduled"]["mono"]
            for b in (first, second)
        ]
        assert prefill[1] < prefill[0]


def test_queueing_with_one_slot() -> None:
    with running_simulator(max_num_seqs=1, **FAST) as sim:
        body = ask("Write something long", max_tokens=20, ignore_eos=True)
        with httpx.Client(base_url=sim.base_url, timeout=20) as c, cf.ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda _: c.post("/v1/chat/completions", json=body).json(), range(3)))
        assert all(r["usage"]["completion_tokens"] == 20 for r in results)
        reqs = sim.truth()["requests"]
        queue = sorted(r["scheduled"]["mono"] - r["queued"]["mono"] for r in reqs)
        assert queue[-1] > queue[0]
        spans = sorted((r["scheduled"]["mono"], r["finish"]["mono"]) for r in reqs)
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end - 1e-6  # never two running at once
        assert value(sim.base_url, "vllm:request_queue_time_seconds_count") == 3


def test_kv_pressure_preempts() -> None:
    with running_simulator(kv_blocks=64, faults={"kv_pressure": 6}, **FAST) as sim:
        body = ask("Tell me a long story", max_tokens=300, ignore_eos=True)
        with httpx.Client(base_url=sim.base_url, timeout=30) as c, cf.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: c.post("/v1/chat/completions", json=body).json(), range(4)))
        assert all(r["usage"]["completion_tokens"] == 300 for r in results)
        assert value(sim.base_url, "vllm:num_preemptions_total") >= 1
        assert sum(r["preemptions"] for r in sim.truth()["requests"]) == value(
            sim.base_url, "vllm:num_preemptions_total"
        )
        assert value(sim.base_url, "vllm:request_num_preemptions_sum") >= 1


def test_kv_pool_accounting() -> None:
    pool = KVPool(10)
    assert pool.acquire([], 4) and pool.used == 4
    pool.publish([b"a", b"b"])
    assert pool.used == 4 and pool.match_prefix([b"a", b"b", b"c"]) == 2
    pool.release([b"a", b"b"], 2)
    assert pool.used == 0 and pool.match_prefix([b"a"]) == 1
    assert pool.acquire([b"a"], 9) and pool.used == 10  # reuses a, evicts b
    assert pool.match_prefix([b"a", b"b"]) == 1
    assert not pool.grow(1)
    pool.set_capacity(5)
    assert pool.usage() == 1.0
