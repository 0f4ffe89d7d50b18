"""The verdict rules against hand-built evidence: each row is written from docs/bottleneck.md's
table (the documented definition), not from the rules' code, and the docs table is the rules'."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from monitor.bottleneck.evidence import Evidence, gather, queue_growth
from monitor.bottleneck.rules import RULES, VERDICTS, decide
from monitor.bottleneck.tail import OTHER, STAGES, TailShare
from monitor.scrape.signals import EngineSignals, Signals

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
    (
        ev("tokenization", "decode", sm_active=0.99, queue_growth=4.0),
        "proxy_bound",
        "tokenization",
    ),  # front before GPU
    (ev("prefill", "tool_turnaround"), "application_bound", "tool_turnaround"),
    (ev("prefill", OTHER, tools=True), "application_bound", OTHER),
    (ev("prefill", OTHER, tools=False), "none", "prefill"),  # "other" of a chat class: not the tools
    (
        ev("queue", "decode", preemptions=3.0, sm_active=0.99, queue_growth=4.0),
        "cache_bound",
        "queue",
    ),  # cache before GPU
    (ev("prefill", "decode", eviction_before_reuse=0.5), "cache_bound", "prefill"),
    (ev("prefill", "decode", eviction_before_reuse=0.49), "none", "prefill"),
    (ev("prefill", "decode", prefix_hit_rate=0.1, prefix_hit_before=0.6), "cache_bound", "prefill"),
    (ev("prefill", "decode", prefix_hit_rate=0.0, prefix_hit_before=0.1), "none", "prefill"),  # never hit
    (ev("prefill", "decode", prefix_hit_rate=0.2, prefix_hit_before=0.6), "none", "prefill"),  # a third
    # GPU-bound: SM or tensor activity high while the queue grows (by at least one waiting request)
    (ev("queue", "decode", sm_active=0.85, queue_growth=1.0), "gpu_bound", "queue"),
    (ev("prefill", "decode", sm_active=0.97, queue_growth=3.0), "gpu_bound", "prefill"),
    (ev("prefill", "decode", sm_active=0.5, tensor_active=0.85, queue_growth=1.0), "gpu_bound", "prefill"),
    (ev("prefill", "decode", sm_active=0.5, tensor_active=0.84, queue_growth=5.0), "none", "prefill"),
    (ev("prefill", "decode", sm_active=0.97, queue_growth=0.99), "none", "prefill"),  # busy, queue flat
    (ev("prefill", "decode", sm_active=0.97, queue_growth=-2.0), "none", "prefill"),  # busy, queue draining
    (ev("prefill", "decode", sm_active=0.97), "none", "prefill"),  # busy, no queue reading
    (ev("queue", "decode", sm_active=0.97, queue_growth=0.0), "scheduler_bound", "queue"),  # busy, flat
    (ev("queue", "decode", sm_active=0.97), "queue_bound", "queue"),  # busy, growth cannot be told
    (ev("queue", "decode", sm_active=0.84), "scheduler_bound", "queue"),
    (ev("queue", "decode", sm_active=0.84, queue_growth=5.0), "scheduler_bound", "queue"),  # growing, room
    (ev("queue", "decode", tensor_active=0.3), "scheduler_bound", "queue"),  # tensor activity alone read
    (ev("queue", "decode"), "queue_bound", "queue"),  # no GPU exporter
    (ev("queue", "decode", queue_growth=5.0), "queue_bound", "queue"),
    # a stage owns a tail at 60 % of it; below, a lead is not a verdict of its own
    (ev("queue", "decode", share=0.6, sm_active=0.3), "scheduler_bound", "queue"),
    (ev("queue", "decode", share=0.59, sm_active=0.3), "none", "queue"),
    (ev("network", "decode", share=0.59), "none", "network"),
    (ev("retry", "retry", share=0.59), "none", "retry"),
    (ev("prefill", "tool_turnaround", share=0.59), "none", "prefill"),
    (ev("queue", "decode", share=0.4, sm_active=0.9, queue_growth=2.0), "gpu_bound", "queue"),  # engine-led
    (ev("prefill", "decode", sm_active=0.3), "none", "prefill"),
    (ev(None, "decode", sm_active=0.99, queue_growth=2.0), "gpu_bound", "decode"),  # e2e alone attributed
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


def test_queue_growth_is_the_later_half_against_the_earlier() -> None:
    """docs/bottleneck.md: the mean requests waiting of the later half of the window's scrape
    intervals (by end) minus the earlier half's; an odd count leaves the middle one out."""
    assert (
        queue_growth([(5.0, 4.0), (1.0, 0.0), (3.0, 9.0), (2.0, 1.0), (4.0, 3.0)])
        == (3 + 4) / 2 - (0 + 1) / 2
    )
    assert queue_growth([(1.0, 6.0), (2.0, 2.0)]) == -4.0  # draining
    assert queue_growth([(1.0, 6.0)]) is None and queue_growth([]) is None


def _interval(end: float, waiting: float | None) -> Signals:
    return Signals(
        "ep", "vllm", "vllm-v1-engine", "m", end, end - 60, False, {}, EngineSignals(waiting=waiting)
    )


def test_gather_reads_the_windows_waiting_queue() -> None:
    """The window (2700, 3600]: its four intervals' waiting 1, 1, 3, 5 grow by (3+5)/2 - (1+1)/2 = 3;
    the interval before the window (waiting 40) and one without a waiting gauge are not read."""
    intervals = [_interval(2640, 40.0), _interval(2760, 1.0), _interval(3000, 1.0), _interval(3100, None),
                 _interval(3300, 3.0), _interval(3600, 5.0)]  # fmt: skip
    e = gather("chat", 3600.0, 900.0, [], intervals)
    assert e.queue_growth == 3.0 and e.to_json()["queue_growth"] == 3.0
    assert gather("chat", 3600.0, 900.0, [], intervals[:2]).queue_growth is None
