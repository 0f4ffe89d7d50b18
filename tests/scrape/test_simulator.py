"""Against the real simulator: signals after N requests match its ground truth; a restart is a marked reset."""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

import httpx
import pytest

from monitor.model import Endpoint
from monitor.scrape.collector import collect, fingerprint
from monitor.scrape.signals import Histogram
from monitor.sim import harness

pytestmark = pytest.mark.timeout(60)
N = 8


def endpoint(url: str) -> Endpoint:
    return Endpoint("sim", url, "vllm", "MiniMaxAI/MiniMax-M3", ("c",), 15.0)


async def chat(client: httpx.AsyncClient, url: str, i: int) -> None:
    body = {
        "model": "MiniMaxAI/MiniMax-M3",
        "max_tokens": 8 + i,
        "messages": [{"role": "user", "content": f"q{i}"}],
    }
    r = await client.post(f"{url}/v1/chat/completions", json=body, timeout=20)
    assert r.status_code == 200


def bucket_of(h: Histogram, value: float) -> tuple[float, float]:
    i = next(i for i, e in enumerate(h.edges) if value <= e)
    return (0.0 if i == 0 else h.edges[i - 1], h.edges[i])


def finished(truth: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in truth["requests"] if r["finish"]["mono"] is not None]


def test_signals_match_ground_truth_and_restart_is_a_reset() -> None:
    with harness.running_simulator(decode_itl=0.002, startup_delay=0.0) as sim:

        async def go() -> None:
            async with httpx.AsyncClient() as client:
                ep = endpoint(sim.base_url)
                first, _ = await collect(ep, client, None)
                await asyncio.gather(*(chat(client, sim.base_url, i) for i in range(N)))
                reading, sig = await collect(ep, client, first)
                truth = finished(sim.truth())
                assert len(truth) == N and sig.reset is False
                reasons: dict[str, int] = {}
                for r in truth:
                    reasons[r["finish_reason"]] = reasons.get(r["finish_reason"], 0) + 1
                t = sig.total
                assert {k: v for k, v in t.finished.items() if v} == reasons
                assert t.generation_tokens == sum(r["completion_tokens"] for r in truth)
                assert t.prompt_tokens == sum(r["prompt_tokens"] for r in truth)
                ttfts = [r["first_token"]["mono"] - r["arrival"]["mono"] for r in truth]
                e2es = [r["finish"]["mono"] - r["arrival"]["mono"] for r in truth]
                for name, values in (("ttft", ttfts), ("e2e", e2es)):
                    h = t.histograms[name]
                    assert h.count == N
                    assert h.mean == pytest.approx(statistics.mean(values), rel=0.05, abs=0.005)
                    lo, hi = bucket_of(h, statistics.median_low(values))
                    p50 = h.quantile(0.5)
                    assert p50 is not None and lo - 1e-9 <= p50 <= max(
                        hi, bucket_of(h, statistics.median_high(values))[1]
                    )
                fp = await fingerprint(ep, client, reading)
                assert fp.block_size == 128 and fp.max_model_len == 131072

                sim.set_faults(restart=True)
                await asyncio.gather(*(chat(client, sim.base_url, i) for i in range(2)))
                _, after = await collect(ep, client, reading)
                assert after.reset is True
                assert after.total.requests == 2
                for e in (after.total, *after.engines.values()):
                    assert all(v >= 0 for v in e.finished.values())
                    assert (e.prompt_tokens or 0) >= 0 and (e.generation_tokens or 0) >= 0
                    assert all(h.count >= 0 and min(h.counts) >= 0 for h in e.histograms.values())

        asyncio.run(go())
