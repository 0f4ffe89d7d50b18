"""``m3mon init`` against held pages of real servers (tests/fixtures/metrics, see its SOURCES.md), each served by a tiny static HTTP server with a ``/v1/models`` written here.
What init says it found is compared with what the page shows, read by eye and written down below;
latency thresholds are checked against the page's ``le`` values read by prometheus_client."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from monitor.cli import main
from tests.init.pages import bucket_edges, models_doc, served_family, static_server

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "metrics"


@dataclass(frozen=True)
class Eye:
    """What the page shows, read by eye (and what /v1/models and /version are made to say)."""

    page: str
    model: str
    served_len: int | None  # max_model_len in /v1/models (None: left out)
    ceiling: int  # the context length: /v1/models, else the page's gauge
    version: str | None
    seen: tuple[str, ...]  # phrases of init's description of the endpoint
    ttft: float | None  # the threshold by eye: the smallest served edge >= the usual start
    itl_family: str | None  # the ITL family the generated rules read, if served (else probes)


M3 = "MiniMaxAI/MiniMax-M3"
CASES = [
    # vLLM 0.13.0: engine label, cache_config_info block_size="128" enable_prefix_caching="True",
    # vllm:spec_decode_* families, no tool-parser counter (0.13 predates it: cannot tell);
    # TTFT edges ... 2.5, 5.0, 7.5 (start for 128K: 5 s); inter_token_latency has 0.1
    Eye("vllm-0.13.0.metrics.txt", M3, 131072, 131072, "0.13.0",
        ("vllm 0.13.0 (metric names of vllm-v1-engine)", "block size 128", "prefix caching on",
         "speculative decoding on", "LoRA off"), 5.0, "vllm:inter_token_latency_seconds"),
    # vLLM 0.8.5: same flags; per-step ITL is still vllm:time_per_output_token_seconds, which the
    # generated rules (reading vllm:inter_token_latency_seconds) cannot read: ITL from the probes
    Eye("vllm-0.8.5.metrics.txt", M3, 131072, 131072, "0.8.5",
        ("vllm 0.8.5 (metric names of vllm-v1-engine)", "block size 128", "prefix caching on",
         "speculative decoding on"), 5.0, None),
    # vLLM 0.8.x excerpt (issue thread): {model_name} only, no engine label, no cache_config_info,
    # no histograms at all: latency SLOs come from the probes
    Eye("vllm-0.8.x-v1-qwen2.5-coder-32b-partial.txt", "Qwen/Qwen2.5-Coder-32B-Instruct", 32768, 32768,
        None, ("vllm (metric names of vllm-v1)", "block size not shown", "prefix caching not shown",
               "speculative decoding off"), None, None),
    # vLLM 0.10.0 excerpt: engine="0" labels, no histograms
    Eye("vllm-0.10.0-v1-glm-4.5-partial.txt", "zai-org/GLM-4.5", 131072, 131072, None,
        ("vllm (metric names of vllm-v1-engine)", "block size not shown"), None, None),
    # SGLang 0.5.23 (its real multiprocess page): page_size 128, context_len 131072 (no
    # max_model_len in /v1/models here), spec_num_draft_tokens 4; TTFT edges ... 4.0, 6.0 -> 6 s
    Eye("sglang-0.5.23.multiprocess.metrics.txt", M3, None, 131072, None,
        ("sglang (metric names of sglang)", "block size 128", "speculative decoding on", "LoRA not shown"), 6.0,
        "sglang:inter_token_latency_seconds"),
    # SGLang docs (2024): {model_name} only, TTFT edges 0.001 ... 1.0 ... 30 (start for 8K: 1 s),
    # per-token latency under its old name time_per_output_token_seconds (the SGLang rules read
    # it), no spec gauges
    Eye("sglang-docs-2024-llama3.1-8b-metrics.txt", "meta-llama/Llama-3.1-8B-Instruct", 8192, 8192, None,
        ("sglang (metric names of sglang)", "block size not shown", "speculative decoding not shown"),
        1.0, "sglang:time_per_output_token_seconds"),
]  # fmt: skip


@pytest.mark.parametrize("eye", CASES, ids=[c.page for c in CASES])
def test_init_reads_what_the_page_shows(eye: Eye, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (PAGES / eye.page).read_text()
    out = tmp_path / "m3mon.yaml"
    with static_server(text, models_doc(eye.model, eye.served_len), eye.version) as url:
        assert main(["init", "--from", url, "-o", str(out)]) == 0
        said = capsys.readouterr().out
        doc = yaml.safe_load(out.read_text())
        (endpoint,) = doc["endpoints"]
        (cls,) = doc["request_classes"]
        assert endpoint["model"] == eye.model and cls["max_context_tokens"] == eye.ceiling
        assert endpoint["backend"] == eye.page.split("-", 1)[0]
        for phrase in eye.seen:
            assert phrase in said, (phrase, said)
        # none of these pages shows a tool parser, a served image or a reasoning parser
        assert cls["probes"] == ["chat"]
        assert main(["check-config", str(out)]) == 0  # valid, and the probes fill every alert's windows
        assert "warning:" not in capsys.readouterr().out
        slos = {s["name"]: s for s in cls["slos"]}
        if eye.ttft is None:
            assert {slos["ttft-p95"]["source"], slos["itl-p95"]["source"]} == {"probes"}
            return
        edges = bucket_edges(text)
        assert slos["ttft-p95"]["source"] == "server"
        assert slos["ttft-p95"]["threshold"] == f"{eye.ttft:g}s"
        assert eye.ttft in edges[served_family(text, "ttft")]
        if eye.itl_family is None:
            assert slos["itl-p95"]["source"] == "probes"
        else:
            assert served_family(text, "itl") == eye.itl_family and slos["itl-p95"]["threshold"] == "100ms"
            assert slos["itl-p95"]["source"] == "server" and 0.1 in edges[eye.itl_family]
        assert main(["check-config", str(out), "--metrics", f"{url}/metrics"]) == 0  # drift guard too
        assert "error:" not in capsys.readouterr().out


def test_flags_a_page_shows_decide_the_probes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The vLLM 0.13.0 page edited as a 0.33 server with these flags shows them (vllm-surface.md
    §2.3): --enable-lora with one adapter loaded (``vllm:lora_requests_info``, the adapter in
    /v1/models with its base as parent), images served (``vllm:mm_cache_queries_total`` 3), and no
    ``vllm:tool_call_parser_invocations_total`` at 0.33: the tool-call parser is off."""
    page = (PAGES / "vllm-0.13.0.metrics.txt").read_text()
    queried = 'vllm:mm_cache_queries_total{engine="0",model_name="MiniMaxAI/MiniMax-M3"} '
    assert queried + "0.0\n" in page
    page = page.replace(queried + "0.0\n", queried + "3.0\n")
    page += (
        "# HELP vllm:lora_requests_info Running stats on lora requests.\n# TYPE vllm:lora_requests_info gauge\n"
        'vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql-lora",waiting_lora_adapters=""} '
        "1.7e+09\n"
    )  # fmt: skip
    models = models_doc(M3, 131072)
    models["data"].insert(0, {"id": "sql-lora", "object": "model", "root": "/adapters/sql", "parent": M3})
    out = tmp_path / "m3mon.yaml"
    with static_server(page, models, "0.33.0") as url:
        assert main(["init", "--from", url, "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "LoRA on (sql-lora)" in said
    (endpoint,) = yaml.safe_load(out.read_text())["endpoints"]
    (cls,) = yaml.safe_load(out.read_text())["request_classes"]
    assert endpoint["model"] == M3  # the base model, not the adapter listed first
    assert cls["probes"] == ["chat", "image"]
    assert "--tool-call-parser is off" in out.read_text().replace("\n    #   ", " ")
