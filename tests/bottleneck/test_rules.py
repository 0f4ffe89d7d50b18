"""The verdict rules against hand-built evidence: each row is written from docs/bottleneck.md's
table (the documented definition), not from the rules' code, and the docs table is the rules'."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from monitor.bottleneck.evidence import Evidence
from monitor.bottleneck.rules import RULES, VERDICTS, decide
from monitor.bottleneck.tail import OTHER, STAGES, TailShare

DOCS = Path(__file__).resolve().parents[2] / "docs" / "bottleneck.md"


def _tail(metric: str, dominant: str | None, share: float = 0.7) -> TailShare:
    if dominant is None:
        return TailShare(
            "chat", metric, "p95", 3, None, (), "3 probe request(s) with a server view; 20 needed"
        )
    stages = [*STAGES[metric], OTHER]
    rest = (1 - share) / (len(stages) - 1)
    return TailShare(
        "chat", metric, "p95", 10, 1.0, tuple((s, share if s == dominant else rest) for s in stages)
    )


def ev(ttft: str | None, e2e: str | None, share: float = 0.7, **kw: Any) -> Evidence:
    """Evidence whose TTFT and e2e tails are led by ``ttft`` and ``e2e`` with ``share`` each."""
    tails = (_tail("ttft", ttft, share), _tail("e2e", e2e, share))
    return Evidence("chat", 3600.0, 900.0, tails, **{"runs": 40, **kw})


CASES = [
    # (evidence, verdict, stage) — one per row of the docs table, and the boundaries between rows
    (ev(None, None), "unknown", None),
    (ev("retry", "decode"), "retry_storm", "retry"),
    (ev("prefill", "decode", retried=4), "retry_storm", "prefill"),  # 10 % of runs retried
    (ev("prefill", "decode", retried=3), "none", "prefill"),  # 7.5 %: not a storm
    (ev("network", "decode"), "proxy_bound", "network"),
    (ev("tokenization", "decode", sm_active=0.99), "proxy_bound", "tokenization"),  # front before GPU
    (ev("prefill", "tool_turnaround"), "application_bound", "tool_turnaround"),
    (ev("prefill", OTHER, tools=True), "application_bound", OTHER),
    (ev("prefill", OTHER, tools=False), "none", "prefill"),  # "other" of a chat class: not the tools
    (ev("queue", "decode", preemptions=3.0, sm_active=0.99), "cache_bound", "queue"),  # cache before GPU
    (ev("prefill", "decode", eviction_before_reuse=0.5), "cache_bound", "prefill"),
    (ev("prefill", "decode", eviction_before_reuse=0.49), "none", "prefill"),
    (ev("prefill", "decode", prefix_hit_rate=0.1, prefix_hit_before=0.6), "cache_bound", "prefill"),
    (ev("prefill", "decode", prefix_hit_rate=0.0, prefix_hit_before=0.1), "none", "prefill"),  # never hit
    (ev("prefill", "decode", prefix_hit_rate=0.2, prefix_hit_before=0.6), "none", "prefill"),  # a third
    (ev("queue", "decode", sm_active=0.85), "gpu_bound", "queue"),
    (ev("prefill", "decode", sm_active=0.97), "gpu_bound", "prefill"),
    (ev("queue", "decode", sm_active=0.84), "scheduler_bound", "queue"),
    (ev("queue", "decode"), "queue_bound", "queue"),  # no GPU exporter
    # a stage owns a tail at 60 % of it; below, a lead is not a verdict of its own
    (ev("queue", "decode", share=0.6, sm_active=0.3), "scheduler_bound", "queue"),
    (ev("queue", "decode", share=0.59, sm_active=0.3), "none", "queue"),
    (ev("network", "decode", share=0.59), "none", "network"),
    (ev("retry", "retry", share=0.59), "none", "retry"),
    (ev("prefill", "tool_turnaround", share=0.59), "none", "prefill"),
    (ev("queue", "decode", share=0.4, sm_active=0.9), "gpu_bound", "queue"),  # engine-led is enough
    (ev("prefill", "decode", sm_active=0.3), "none", "prefill"),
    (ev(None, "decode", sm_active=0.99), "gpu_bound", "decode"),  # e2e alone attributed
]


@pytest.mark.parametrize(("evidence", "verdict", "stage"), CASES)
def test_each_documented_rule(evidence: Evidence, verdict: str, stage: str | None) -> None:
    got = decide(evidence)
    assert (got.verdict, got.stage) == (verdict, stage), got.reason


def test_every_verdict_is_reached() -> None:
    assert {v for _, v, _ in CASES} == set(VERDICTS)


def test_the_docs_table_is_the_rules() -> None:
    """docs/bottleneck.md lists the rules in order, each with its condition, as RULES says."""
    rows = [
        [c.strip().strip("`") for c in line.strip("|").split("|")]
        for line in DOCS.read_text().splitlines()
        if re.match(r"\|\s*\d+\s*\|", line)
    ]
    assert [(r[1], r[3]) for r in rows] == [(rule.verdict, rule.when) for rule in RULES]
