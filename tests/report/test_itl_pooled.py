"""The report's ITL row: P50/P95/P99 pooled over every per-token sample, not over probe means.

Four probes of class ``chat`` in the week, hand-made per-token ITL samples:

* answered, 8 samples of 20 ms; answered, 2 samples of 500 ms;
* a wrong answer (the service answered: counts), 2 samples of 20 ms;
* a timeout (not answered: left out, as in the SLO slices), 5 samples of 900 ms.

Pooled: 10 samples in the bucket (1 ms × 1.2^16, 1 ms × 1.2^17] and 2 in (1 ms × 1.2^34,
1 ms × 1.2^35] (the stored edges, docs/probes.md). Percentiles interpolate linearly inside the
bucket holding rank q·N, as Prometheus' ``histogram_quantile`` does, N = 12:

* P50: rank 6 → lo₁ + (hi₁ − lo₁) · 6/10
* P95: rank 11.4 → lo₂ + (hi₂ − lo₂) · 1.4/2
* P99: rank 11.88 → lo₂ + (hi₂ − lo₂) · 1.88/2

Over probe means (20 ms, 500 ms, 20 ms) the P50 would be 20 ms and the P95 452 ms; pooled they
are 20.7 ms, 561.1 ms and P99 584.8 ms (1.2^16 ms = 18.49 ms, 1.2^34 ms = 492.2 ms). A regression
back to means, or an unwritten histogram, fails.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.model import load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report import generate
from monitor.report.data import Period
from monitor.report.markdown import render_markdown
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op
from tests.report import week as W

LO1, HI1 = 0.001 * 1.2**16, 0.001 * 1.2**17  # 18.49 ms, 22.19 ms
LO2, HI2 = 0.001 * 1.2**34, 0.001 * 1.2**35  # 492.2 ms, 590.7 ms
P50 = LO1 + (HI1 - LO1) * 6 / 10
P95 = LO2 + (HI2 - LO2) * 1.4 / 2
P99 = LO2 + (HI2 - LO2) * 1.88 / 2


def _probe(k: int, reason: str | None, samples: tuple[float, ...]) -> ProbeResult:
    timings = Timings(ttft=0.3, e2e=1.0, itl_samples=samples)
    return ProbeResult("ep-a", "chat", "chat", W.START + 3600 + 60 * k, reason, timings)


def test_report_itl_row_is_pooled_over_per_token_samples(tmp_path: Path) -> None:
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(W.CONFIG)
    model = load_model(cfg)
    url = f"sqlite:///{tmp_path / 'itl.db'}"
    upgrade(url)
    probes = [_probe(0, None, (0.02,) * 8), _probe(1, None, (0.5,) * 2),
              _probe(2, "wrong_answer", (0.02,) * 2), _probe(3, "timeout", (0.9,) * 5)]  # fmt: skip
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints), *(probe_op(model, p) for p in probes)])
        week = Period(W.WEEK, datetime.fromtimestamp(W.START, UTC), datetime.fromtimestamp(W.END, UTC))
        data = generate.build(model, store, week, W.NOW)
    finally:
        store.close()
    (itl,) = [s for s in data.latency if (s.request_class, s.kind) == ("chat", "itl")]
    assert itl.count == 12
    assert (itl.p50, itl.p95, itl.p99) == pytest.approx((P50, P95, P99), rel=1e-4)
    (row,) = [line for line in render_markdown(data).splitlines() if line.startswith("| chat | ITL")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:] == ["12", "21 ms", "561 ms", "585 ms"]  # P50 20.7, P95 561.1, P99 584.8 ms
