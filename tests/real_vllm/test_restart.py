"""A real server restart in the middle of a run: the collector sees its counters go back to zero.

The interval spanning the restart is marked (``reset``), no rate is negative, and the deployment
fingerprint stays the same server. Runs last in the tier (see conftest): it restarts the server.
"""

from __future__ import annotations

import time

import pytest

from monitor.store.tables import ScrapeIntervalRow
from tests.e2e.stack import wait_until
from tests.real_vllm.conftest import Real, wait_for_probe_round
from tests.real_vllm.stack import SERVED
from tests.support import localhttp

RATES = ("request_rate", "prompt_tokens_per_second", "generation_tokens_per_second", "preemptions")


def _traffic(real: Real, n: int) -> None:
    for i in range(n):
        body = {"model": SERVED, "max_tokens": 4, "seed": i, "messages": [{"role": "user", "content": "hi"}]}
        assert (
            localhttp.post(f"{real.server.base_url}/v1/chat/completions", json=body, timeout=60).status_code
            == 200
        )


@pytest.mark.slow  # restarts the real server (~50 s)
def test_restart_is_a_marked_counter_reset_without_negative_rates(real: Real) -> None:
    wait_for_probe_round(real)
    _traffic(real, 3)
    time.sleep(2.5)  # scraped with the counters up
    stopped = time.time()
    real.server.stop()
    real.server.start()
    _traffic(real, 1)  # counters restart lower than before: a reset, not a decrease

    def after() -> list[ScrapeIntervalRow]:
        rows = real.rows(ScrapeIntervalRow, ScrapeIntervalRow.end > real.server.starts[-1] + 2)
        return rows if len(rows) >= 2 else []

    wait_until(after, 30, "scrape intervals after the restart", every=0.5)
    rows = real.rows(ScrapeIntervalRow, ScrapeIntervalRow.end > stopped - 5)
    reset = [r for r in rows if r.reset]
    assert len(reset) == 1, [(r.start, r.end, r.reset) for r in rows]
    assert reset[0].end > real.server.starts[-1] - 1
    for row in rows:
        assert row.requests >= 0, row.end
        for name in RATES:
            value = getattr(row, name)
            assert value is None or value >= 0, (name, value, row.end)
        assert all(v >= 0 for v in row.finished.values()), row.finished
    assert real.deployment().vllm_version is not None
