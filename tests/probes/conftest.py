"""Fixtures: a real simulator (fast latencies) and an m3mon model whose classes point at it."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.model import Model, load_model
from monitor.sim.harness import SimHandle, running_simulator
from tests.support.configs import service_sections

#: Small, fast simulator: 2 ms decode steps, no jitter, a 4K context like the test class ceiling.
SIM_SETTINGS = {"decode_itl": 0.002, "jitter": 0.0, "max_model_len": 4096, "prefill_tps": 2_000_000.0,
                "reasoning_tokens": 12, "answer_tokens": (6, 10), "enable_per_request_metrics": True}  # fmt: skip


def write_config(path: Path, base_url: str, *, timeout: str = "20s", kinds: str | None = None) -> Path:
    all_kinds = kinds or "[chat, tool_call, image, long_prompt, reasoning, agent_session]"
    path.write_text(textwrap.dedent(f"""\
        version: m3mon/v1
        endpoints:
          - name: sim
            base_url: {base_url}
            backend: vllm
            model: MiniMaxAI/MiniMax-M3
            classes: [small]
        request_classes:
          - name: small
            max_context_tokens: 4096
            probes: {all_kinds}
            probe: {{interval: 30s, timeout: {timeout}, jitter: 1ms, long_prompt_tokens: 3000,
                     agent_rounds: 2, tool_delay: 10ms}}
            slos:
              - {{name: availability, sli: availability, objective: 99.9, source: probes}}
              - {{name: ttft, sli: ttft, threshold: 2.5s, objective: 95, source: probes}}
        """) + service_sections(path.parent, spool=False))  # fmt: skip
    return path


@pytest.fixture(scope="module")
def sim() -> Iterator[SimHandle]:
    with running_simulator(**SIM_SETTINGS) as handle:  # type: ignore[arg-type]
        yield handle


@pytest.fixture
def healthy_sim(sim: SimHandle) -> Iterator[SimHandle]:
    sim.clear_faults()
    try:
        yield sim
    finally:
        sim.clear_faults()


@pytest.fixture
def model(tmp_path: Path, healthy_sim: SimHandle) -> Model:
    return load_model(write_config(tmp_path / "monitor.yaml", healthy_sim.base_url))
