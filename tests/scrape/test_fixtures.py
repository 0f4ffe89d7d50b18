"""Every captured page read into canonical signals; expected numbers computed by hand from the files."""

from __future__ import annotations

import pytest

from monitor.errors import ScrapeError
from monitor.scrape.interval import signals, signals_by_model
from tests.scrape.conftest import M3, reading_of

approx = pytest.approx


def test_vllm_0_13_modern_names() -> None:
    r = reading_of("vllm-0.13.0.metrics.txt")
    assert (r.backend, r.generation, list(r.models)) == ("vllm", "vllm-v1-engine", [M3])
    t = signals("e", r).total
    assert t.finished == {"stop": 150, "length": 41, "abort": 9, "error": 0}
    assert t.requests == 200
    assert (t.prompt_tokens, t.generation_tokens, t.preemptions) == (1302994, 116682, 5)
    assert (t.running, t.waiting) == (5, 2)
    assert t.kv_cache_usage == approx(0.6198581560283688)
    assert t.prefix_cache_hit_rate == approx(578048 / 1302994)
    assert t.spec_acceptance_rate == approx(78690 / 113361)  # 0.694
    assert t.spec_mean_accepted_length == approx(1 + 78690 / 37787)  # 3.082
    assert t.spec_accepted_per_position == {"0": 32469, "1": 26281, "2": 19940}
    ttft = t.histograms["ttft"]
    assert ttft.count == 205 and ttft.mean == approx(114.81141686439514 / 205)
    # p50: rank 102.5 falls in (0.25, 0.5] holding 119-72=47: 0.25 + 0.25 * 30.5/47
    assert ttft.quantile(0.5) == approx(0.25 + 0.25 * 30.5 / 47)
    # p95: rank 194.75 in (1.0, 2.5] holding 204-170=34
    assert ttft.quantile(0.95) == approx(1.0 + 1.5 * 24.75 / 34)
    assert ttft.quantile(0.99) == approx(1.0 + 1.5 * 32.95 / 34)
    assert ttft.fraction_under(0.5) == (approx(119 / 205), True)
    assert ttft.fraction_under(2.5) == (approx(204 / 205), True)
    assert set(t.histograms) == {"ttft", "itl", "tpot", "e2e", "queue", "prefill", "decode", "inference",
                                 "prompt_tokens", "generation_tokens"}  # fmt: skip
    assert t.histograms["itl"].count == 37787  # inter_token_latency_seconds
    assert t.histograms["tpot"].count == 200  # request_time_per_output_token_seconds
    assert t.histograms["e2e"].mean == approx(1064.3651905059814 / 200)
    assert r.cache_config["0"]["num_gpu_blocks"] == "1410"


def test_vllm_0_8_5_old_names_are_mapped() -> None:
    t = signals("e", reading_of("vllm-0.8.5.metrics.txt")).total
    assert t.finished == {"stop": 158, "length": 29, "abort": 13}
    assert t.kv_cache_usage == approx(0.6199460916442049)  # from gpu_cache_usage_perc
    assert (t.prefix_cache_queries, t.prefix_cache_hits) == (12091, 5317)  # gpu_prefix_cache_* (blocks)
    itl = t.histograms["itl"]  # from time_per_output_token_seconds
    assert itl.count == 35318
    # p50: rank 17659 in (0.01, 0.025] holding 19083-197
    assert itl.quantile(0.5) == approx(0.01 + 0.015 * (17659 - 197) / (19083 - 197))
    assert itl.fraction_under(0.05) == (approx(34346 / 35318), True)
    assert "tpot" not in t.histograms


def test_new_name_wins_when_both_exist() -> None:
    # 0.10.0: deprecated gpu_prefix_cache_hits_total (0) next to prefix_cache_queries_total (32)
    r = reading_of("vllm-0.10.0-v1-glm-4.5-partial.txt")
    assert r.generation == "vllm-v1-engine"
    t = signals("e", r).total
    assert t.prefix_cache_queries == 32
    assert t.prefix_cache_hits == 0  # only the old name shows hits on this excerpt
    assert t.kv_cache_usage == approx(9.75010481363281e-06)
    both = (
        '# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5\n'
        '# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.9\n'
    )
    from monitor.scrape.collector import read_text

    assert signals("e", read_text(both, 1.0)).total.kv_cache_usage == 0.5


def test_vllm_v1_without_engine_label() -> None:
    r = reading_of("vllm-0.8.x-v1-qwen2.5-coder-32b-partial.txt")
    assert r.generation == "vllm-v1"
    assert r.process_start == approx(1.74262400557e09)
    t = signals("e", r).total
    assert (t.running, t.waiting, t.kv_cache_usage) == (0, 0, 0)
    assert t.prefix_cache_queries is None  # its sample was cut off in the source: TYPE only
    assert list(signals("e", r).engines) == ["0"]


def test_v0_excerpt_is_garbled_unless_read_as_partial() -> None:
    with pytest.raises(ScrapeError) as err:
        reading_of("vllm-0.4.x-v0-ibm-fork-bloom-560m-partial.txt")
    assert err.value.reason == "garbled" and "+Inf" in err.value.detail
    r = reading_of("vllm-0.4.x-v0-ibm-fork-bloom-560m-partial.txt", partial=True)
    assert r.generation == "vllm-v0"
    s = signals("e", r)
    assert (s.total.prompt_tokens, s.total.generation_tokens) == (1196, 218152)
    assert "ttft" not in s.total.histograms
    assert any("no +Inf bucket" in n for n in s.notes)


@pytest.mark.parametrize("name", ["sglang-0.5.23.metrics.txt", "sglang-0.5.23.multiprocess.metrics.txt"])
def test_sglang_0_5_23(name: str) -> None:
    r = reading_of(name)
    assert (r.backend, r.generation) == ("sglang", "sglang")
    t = signals("e", r).total
    assert t.finished == {"completed": 187, "abort": 13}  # num_requests_total 200 incl. 13 aborted
    assert (t.prompt_tokens, t.generation_tokens, t.preemptions) == (1484103, 99445, 5)
    assert (t.running, t.waiting) == (5, 2)
    assert t.kv_cache_usage == approx(0.6201648700063411)
    assert t.prefix_cache_hit_rate == approx(685312 / 1484103)  # cached_tokens / prompt_tokens
    assert t.spec_mean_accepted_length == approx(3.1)  # reported gauge (no accepted-token counter)
    assert t.spec_acceptance_rate == approx(0.7)
    e2e = t.histograms["e2e"]
    assert e2e.count == 200 and e2e.mean == approx(947.8003930386872 / 200)
    assert e2e.quantile(0.5) == approx(2.0 + 2.0 * 44 / 57)  # rank 100 in (2, 4] holding 113-56
    assert e2e.quantile(0.99) == approx(19.0)  # rank 198 in (10, 20] holding 20
    assert e2e.fraction_under(10.0) == (approx(0.9), True)
    assert e2e.fraction_under(5.0) == (approx((113 + 33 / 2) / 200), False)  # interpolated in (4, 6]
    assert t.histograms["queue"].count == 205
    assert t.histograms["prefill"].count == 205  # per_stage{stage=prefill_forward}
    assert t.histograms["tpot"].count == 187
    assert t.histograms["itl"].count == 102259


def test_sglang_multiprocess_pid_label_is_summed_away() -> None:
    r = reading_of("sglang-0.5.23.multiprocess.metrics.txt")
    assert list(r.models[M3]) == ["0"]
    assert signals("e", r).total.running == 5


def test_sglang_docs_2024() -> None:
    t = signals("e", reading_of("sglang-docs-2024-llama3.1-8b-metrics.txt")).total
    assert (t.prompt_tokens, t.generation_tokens) == (8128902, 7557572)
    assert (t.running, t.waiting, t.kv_cache_usage) == (162, 2826, 0.28)
    assert t.prefix_cache_hit_rate == approx(0.007507552643049313)  # reported gauge
    ttft = t.histograms["ttft"]
    assert ttft.count == 11008 and ttft.mean == approx(2.3518979474117756e06 / 11008)
    assert ttft.quantile(0.5) == 30.0  # rank 5504 lies in +Inf: the highest finite edge
    assert t.histograms["itl"].count == 7400757  # old time_per_output_token_seconds
    assert t.finished == {}


def test_three_models_two_engines_split_by_model() -> None:
    r = reading_of("vllm-0.33-3models-2engines.metrics.txt")
    assert list(r.models) == [M3, "org/model-b", "org/model-c"]
    per = signals_by_model("e", r)
    b = per["org/model-b"]  # i=1: engine e has stop 20+e, length 1+e, abort 1
    assert b.model == "org/model-b" and list(b.engines) == ["0", "1"]
    assert b.engines["0"].finished["stop"] == 20 and b.engines["1"].finished["stop"] == 21
    assert b.total.finished == {"stop": 41, "length": 3, "abort": 2, "error": 0, "repetition": 0}
    assert b.total.prompt_tokens == 2000 + 4000
    assert (b.total.running, b.total.waiting) == (2 + 3, 0 + 1)
    assert b.total.kv_cache_usage == approx((0.25 + 0.5) / 2)  # ratio: mean over engines
    ttft = b.total.histograms["ttft"]  # observations 0.1 0.3 0.9 2.0 | 0.1 0.3 0.9 3.0
    assert (ttft.count, ttft.mean) == (8, approx(7.6 / 8))
    assert ttft.quantile(0.5) == approx(0.5)  # rank 4 in (0.25, 0.5] holding 2: 0.25 + 0.25 * 2/2
    assert ttft.quantile(0.95) == approx(4.0)  # rank 7.6 in (2.5, 5] holding 1
    assert ttft.fraction_under(1.0) == (0.75, True)
    assert ttft.fraction_under(0.3) == (approx(0.3), False)  # (2 + 2 * 0.05/0.25) / 8
    assert per[M3].total.requests == 10 + 11 + 0 + 1 + 2
    # the endpoint's configured model is picked out of the page
    assert signals("e", r, model=M3).total.requests == per[M3].total.requests
    # an unknown model: summed over all three, with a note
    s = signals("e", r, model="other")
    assert s.model is None and s.total.requests == sum(p.total.requests for p in per.values())
    assert len(s.engines) == 6 and any("summed over models" in n for n in s.notes)


def test_every_page_has_canonical_fields(page_name: str) -> None:
    partial = "ibm" in page_name
    r = reading_of(page_name, partial=partial)
    s = signals("e", r)
    assert r.models and s.total is not None
    d = s.to_dict((0.5, 2.5))
    assert set(d) >= {"endpoint", "backend", "generation", "model", "reset", "rates", "total", "engines"}
    for h in s.total.histograms.values():
        assert h.count >= 0 and all(c >= 0 for c in h.counts)
