"""The simulator kept honest: its /metrics against the real vLLM's, family by family.

Both serve a chat and a tool call first (a few families only appear with traffic). The simulator
runs with the real server's ``--max-model-len`` and without speculative decoding, like the real
tiny model. Every difference in names, types, label names or bucket edges must be one of
``monitor.sim.surface.EXPLAINED`` (documented in docs/simulator.md); an explained difference that
no longer occurs must be removed from that list.
"""

from __future__ import annotations

from typing import Any

from monitor.probes.tool_call import TOOLS
from monitor.sim.harness import running_simulator
from monitor.sim.surface import EXPLAINED, differences, shapes
from tests.real_vllm.conftest import Real
from tests.real_vllm.stack import MAX_MODEL_LEN, SERVED
from tests.support import localhttp


def _traffic(base_url: str, model: str) -> str:
    bodies: list[dict[str, Any]] = [
        {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4},
        {"messages": [{"role": "user", "content": "Weather?"}], "max_tokens": 4, "tools": TOOLS},
    ]
    for body in bodies:
        response = localhttp.post(
            f"{base_url}/v1/chat/completions", json={"model": model, **body}, timeout=60
        )
        assert response.status_code == 200, response.text
    return localhttp.get(f"{base_url}/metrics", timeout=10).text


def test_simulator_metrics_differ_from_real_vllm_only_where_explained(real: Real) -> None:
    real_page = _traffic(real.server.base_url, SERVED)
    with running_simulator(max_model_len=MAX_MODEL_LEN, spec_tokens=0, decode_itl=0.002, seed=3) as sim:
        sim_page = _traffic(sim.base_url, sim.sim.config.model)
    found = differences(shapes(real_page), shapes(sim_page))
    unexplained = sorted(found - EXPLAINED.keys())
    assert unexplained == [], f"simulator /metrics differs from vLLM 0.32.0 without a reason: {unexplained}"
    stale = sorted(EXPLAINED.keys() - found)
    assert stale == [], f"explained differences that no longer occur (remove them): {stale}"
