"""Prompts sized by the server's tokenizer (monitor.probes.tokens) against the simulator.

The simulator's ``/tokenize`` answers like vLLM's; the check is what the engine then charges
(``usage.prompt_tokens`` of a real request) against the budget asked for.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from monitor.model import Endpoint, load_model
from monitor.probes import tokens
from monitor.sim.harness import SimHandle
from tests.probes.conftest import write_config


def _endpoint(sim: SimHandle, tmp_path: Path) -> Endpoint:
    return load_model(write_config(tmp_path / "m.yaml", sim.base_url)).endpoints[0]


def _charged(sim: SimHandle, text: str) -> int:
    body = {"model": "MiniMaxAI/MiniMax-M3", "max_tokens": 1, "messages": [{"role": "user", "content": text}]}
    doc = httpx.post(f"{sim.base_url}/v1/chat/completions", json=body, timeout=30).json()
    return int(doc["usage"]["prompt_tokens"])


@pytest.mark.parametrize("budget", [300, 3000])
def test_prompt_of_tokens_fits_the_budget_the_engine_charges(
    sim: SimHandle, tmp_path: Path, budget: int
) -> None:
    endpoint = _endpoint(sim, tmp_path)

    async def go() -> tuple[str, tokens.Calibration]:
        async with httpx.AsyncClient() as client:
            text = await tokens.prompt_of_tokens(client, endpoint, budget, seed=1, prefix="Session abc.")
            return text, await tokens.calibrate(client, endpoint)

    text, cal = asyncio.run(go())
    assert cal.source == "tokenize"
    assert text.startswith("Session abc. ")
    charged = _charged(sim, text)
    assert 0.85 * budget < charged <= budget


def test_usage_calibration_agrees_with_tokenize(sim: SimHandle, tmp_path: Path) -> None:
    """Where /tokenize is not served the two-request usage fallback measures the same cost."""
    endpoint = _endpoint(sim, tmp_path)

    async def go() -> tuple[tokens.Calibration | None, tokens.Calibration | None]:
        async with httpx.AsyncClient() as client:
            return await tokens.by_tokenize(client, endpoint), await tokens.by_usage(client, endpoint)

    by_tokenize, by_usage = asyncio.run(go())
    assert by_tokenize is not None and by_usage is not None and by_usage.source == "usage"
    assert by_usage.per_sentence == pytest.approx(by_tokenize.per_sentence, rel=0.02)
    assert abs(by_usage.overhead - by_tokenize.overhead) <= 4


def test_tokenize_rejects_a_body_without_prompt_or_messages(sim: SimHandle) -> None:
    bad = httpx.post(f"{sim.base_url}/tokenize", json={"model": "MiniMaxAI/MiniMax-M3"}, timeout=5)
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "BadRequestError"
    unknown = httpx.post(f"{sim.base_url}/tokenize", json={"model": "other", "prompt": "x"}, timeout=5)
    assert unknown.status_code == 404
