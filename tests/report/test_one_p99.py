"""One P99 per population, computed once and printed twice: the latency table's P99 of a class is
the number the tail section's P99+ line starts from (the demo once printed 5.28 s in one and "from
5.32 s" in the other: linear interpolation over every answered probe against the nearest rank over
the probes with a server view).

Class ``chat`` has 150 answered probes with TTFT 1.00 s, 1.01 s, … 2.49 s; every fifth has no
server view. The oracle is numpy's percentile (linear interpolation) of the 150 TTFTs written."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from monitor.model import Model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import generate
from monitor.report.markdown import render_markdown
from monitor.store import Store
from monitor.store.ops import Op, probe_op
from tests.report import stores

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}
request_classes:
  - {name: chat, max_context_tokens: 32768, probes: [chat], slos: [{name: a, sli: availability, objective: 99}]}
report: {timezone: UTC}
"""
T = datetime(2026, 11, 23, 1, tzinfo=UTC).timestamp()
TTFTS = [1.0 + 0.01 * k for k in range(150)]


def _ops(model: Model) -> list[Op]:
    out = []
    for k, ttft in enumerate(TTFTS):
        view = {} if k % 5 == 4 else {"server_queue": 0.1, "server_prefill": ttft - 0.2, "server_decode": 0.5,
                                      "network": 0.1}  # fmt: skip
        t = Timings(ttft=ttft, e2e=ttft + 0.5, **view)  # type: ignore[arg-type]
        at = T + 600 * k
        out.append(
            probe_op(model, ProbeResult("ep", "chat", "chat", at, None, t, finished_at=at + ttft + 0.5))
        )
    return out


def test_latency_table_and_tail_print_the_same_percentiles(tmp_path: Path) -> None:
    model, url = stores.stored(tmp_path, CONFIG, _ops)
    store = Store(url)
    try:
        md = render_markdown(generate.build(model, store, stores.WEEK, stores.NOW))
    finally:
        store.close()
    p50, p95, p99 = (f"{v:.2f} s" for v in np.percentile(TTFTS, [50, 95, 99]))
    assert re.search(rf"\| chat \| TTFT \| 150 \| {p50} \| {p95} \| {p99} \|", md), md
    tail = re.search(r"P99\+ TTFT of chat \((\d+) requests from ([0-9.]+ m?s)\)", md)
    assert tail is not None and tail[2] == p99
    p95_line = re.search(r"P95\+ TTFT of chat \((\d+) requests from ([0-9.]+ m?s)\)", md)
    assert p95_line is not None and p95_line[2] == p95
    # the band: the probes with a server view at or above that P99 (counted from the values written)
    edge = float(np.percentile(TTFTS, 99))
    assert int(tail[1]) == sum(1 for k, v in enumerate(TTFTS) if v >= edge and k % 5 != 4)
