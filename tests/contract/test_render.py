"""The contract's Markdown and the report's HTML section: every clause shown, every value escaped."""

from __future__ import annotations

from monitor.contract.build import Capacity, ClassContract
from monitor.contract.ceiling import from_requests
from monitor.report import contract as report_contract


def contract(name: str, checkpoint: str) -> ClassContract:
    return ClassContract(
        name=name,
        endpoint="pool",
        ceiling=from_requests([100, 200, 300], 32768, 131072, "probe runs"),
        capacity=Capacity("concurrency", 16, 32, 5),
        path={"checkpoint": checkpoint, "kv_cache_dtype": "fp8", "tensor_parallel_size": 8},
        fingerprint_digest="ab" * 32,
        objectives=("P95 TTFT ≤ 2.5 s (ttft-p95, server)",),
    )


def test_markdown_states_every_clause() -> None:
    text = "\n".join(report_contract.markdown_lines((contract("chat-32k", "MiniMaxAI/MiniMax-M3"),)))
    assert "### chat-32k (on pool)" in text
    assert "32,768 tokens (pool max-model-len 131,072); covers 100.00% of observed requests" in text
    assert "KV waste: max-model-len 131072 is 437× the class's P99 of 300 tokens" in text  # 131072 / 300
    assert "SLOs hold up to 16 in flight (concurrency, 5 run(s); an SLO failed at 32 in flight)" in text
    assert "checkpoint: MiniMaxAI/MiniMax-M3; KV-cache dtype: fp8; tensor parallel: 8" in text
    assert "expert parallel: not recorded" in text and "P95 TTFT ≤ 2.5 s" in text


def test_the_report_section_escapes_values() -> None:
    html = str(report_contract.html((contract("<b>x</b>", "<script>alert(1)</script>"),)))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    assert str(report_contract.html(())) == "" and report_contract.markdown_lines(()) == []
