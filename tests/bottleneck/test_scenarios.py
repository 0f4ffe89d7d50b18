"""One scenario per verdict on the real simulator (its DCGM surface included): the service's jobs
name the documented verdict and the tail stage behind it, in :meth:`Jobs.assess` and on the
exporter's page (read back with prometheus_client's parser: exactly one verdict is 1 per class).

The injected faults and what the rules must read from them (docs/bottleneck.md, "Scenarios"):
a saturated GPU (DCGM SM active 98 %, engine steps 2x slower), a scheduler that stalls in bursts
with idle GPUs, a KV pool shrunk under the pool's own long generations (preemptions), a slow
API server in front of the engine, slow tools in an agent loop, 429s that the retry policy
absorbs, and two controls: a healthy pool, and one busy with the same load but enough KV.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitor.bottleneck.rules import VERDICTS
from monitor.sim.harness import SimHandle
from tests.bottleneck.scenarios import Scenario, load, ramp, run_scenario

pytestmark = pytest.mark.timeout(120)


async def _stalls(sim: SimHandle) -> None:
    """The scheduler admits nothing for 0.4 s of every 0.6 s (the GPUs idle meanwhile)."""
    while True:
        await asyncio.to_thread(sim.set_faults, brownout_queue_stall=True)
        await asyncio.sleep(0.4)
        await asyncio.to_thread(sim.set_faults, brownout_queue_stall=False)
        await asyncio.sleep(0.2)


NONE = frozenset({None})
RETRY = {"retry": {"max_retries": 2, "initial_delay": "0.2s", "max_delay": "0.5s"}}
SCENARIOS = [
    Scenario("healthy", "none", NONE),
    Scenario("busy-with-room", "none", NONE, background=load(4)),
    # saturated: GPUs pinned busy while the pool's own traffic builds up beyond its 4 batch slots
    Scenario(
        "saturated-gpu",
        "gpu_bound",
        "queue",
        faults={"gpu_saturated": True},
        sim={"max_num_seqs": 4},
        background=ramp(12, 0.3),
    ),
    # the same busy GPUs with no queue building up: not GPU-bound (the "queue growing")
    Scenario("saturated-gpu-flat-queue", "none", NONE, faults={"gpu_saturated": True}),
    Scenario("scheduler-stall", "scheduler_bound", "queue", background=_stalls),
    Scenario("scheduler-stall-no-gpu-exporter", "queue_bound", "queue", background=_stalls, gpu=False),
    Scenario("cache-thrash", "cache_bound", "queue", faults={"kv_pressure": 12}, background=load(6)),
    Scenario("slow-proxy", "proxy_bound", "frontend", faults={"preprocess_delay": 0.4}),
    Scenario(
        "slow-tools",
        "application_bound",
        "application",
        probes=("agent_session",),
        probe={"tool_delay": "0.8s", "agent_rounds": 1},
        parallel=4,
    ),
    Scenario(
        "429-retried", "load_shedding", "retry", faults={"error_rate": 0.3, "error_status": 429}, probe=RETRY
    ),
]


def _published(page: str) -> dict[str, float]:
    return {
        s.labels["verdict"]: s.value
        for f in text_string_to_metric_families(page)
        for s in f.samples
        if s.name == "m3mon_bottleneck_verdict" and s.labels["class"] == "chat"
    }


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
def test_the_injected_bottleneck_is_named(sc: Scenario, tmp_path: Path) -> None:
    verdict, page, seconds = run_scenario(tmp_path, sc)
    stages = sc.stage if isinstance(sc.stage, frozenset) else frozenset({sc.stage})
    assert verdict.verdict == sc.verdict and verdict.stage in stages, verdict.reason
    published = _published(page)
    assert set(published) == set(VERDICTS)
    assert [v for v, x in published.items() if x == 1.0] == [sc.verdict]
    assert seconds < 60, seconds  # the window filled and the verdict came within the scenario's rounds
