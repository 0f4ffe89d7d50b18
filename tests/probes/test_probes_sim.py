"""Every probe kind against the real simulator: healthy, and under each fault it can inject."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor.conventions import PROBE_KINDS
from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult
from monitor.probes.runner import PlannedProbe, plan_round, run_probe
from monitor.sim.harness import SimHandle, running_simulator
from tests.probes.conftest import SIM_SETTINGS, write_config

pytestmark = pytest.mark.timeout(60)


def planned(model: Model, kind: str, **plan: Any) -> PlannedProbe:
    (p,) = plan_round(model, kinds=[kind])
    return replace(p, spec=replace(p.spec, plan=replace(p.spec.plan, **plan))) if plan else p


def run(p: PlannedProbe) -> ProbeResult:
    async def go() -> ProbeResult:
        async with httpx.AsyncClient() as client:
            return await run_probe(p, client)

    return asyncio.run(go())


@pytest.mark.parametrize("kind", PROBE_KINDS)
def test_healthy_simulator_passes_every_kind(model: Model, kind: str) -> None:
    result = run(planned(model, kind))
    assert result.ok, (result.reason, result.detail)
    t = result.timings
    assert t.ttft is not None and t.e2e is not None and 0 < t.ttft <= t.e2e
    assert result.model == "MiniMaxAI/MiniMax-M3" and result.trace_id and len(result.trace_id) == 32
    assert result.usage.prompt_tokens and result.usage.completion_tokens


FAULTS: list[tuple[str, dict[str, Any], str]] = [
    ("chat", {"error_rate": 1.0, "error_status": 500}, "http_status"),
    ("chat", {"error_rate": 1.0, "error_status": 429}, "http_status"),
    ("chat", {"health_ok_completions_fail": True}, "http_status"),
    ("chat", {"dead": True}, "http_status"),
    ("chat", {"midstream_disconnect": 2}, "stream_broken"),
    ("chat", {"empty_output": True}, "empty_output"),
    ("chat", {"truncated_output": 1}, "truncated"),
    ("chat", {"degenerate_output": True}, "degenerate_output"),
    ("chat", {"wrong_model": "someone/else"}, "wrong_model"),
    ("chat", {"parser_leak": True}, "parser_leak"),
    ("tool_call", {"malformed_tool_call": "invalid_json"}, "malformed_tool_call"),
    ("tool_call", {"malformed_tool_call": "schema_mismatch"}, "malformed_tool_call"),
    ("tool_call", {"parser_leak": True}, "parser_leak"),
    ("tool_call", {"degenerate_output": True}, "degenerate_output"),
    ("image", {"wrong_model": "someone/else"}, "wrong_model"),
    ("image", {"empty_output": True}, "empty_output"),
    ("long_prompt", {"midstream_disconnect": 1}, "stream_broken"),
    ("long_prompt", {"truncated_output": 1}, "truncated"),
    ("reasoning", {"parser_leak": True}, "parser_leak"),
    ("reasoning", {"truncated_output": 3}, "truncated"),
    ("agent_session", {"malformed_tool_call": "invalid_json"}, "malformed_tool_call"),
    ("agent_session", {"error_rate": 1.0, "error_status": 503}, "http_status"),
    ("agent_session", {"midstream_disconnect": 3}, "stream_broken"),
]


@pytest.mark.parametrize(
    ("kind", "faults", "reason"), FAULTS, ids=[f"{k}-{next(iter(f))}" for k, f, _ in FAULTS]
)
def test_each_fault_yields_its_category(model: Model, healthy_sim: SimHandle, kind: str, faults: dict[str, Any],
                                        reason: str) -> None:  # fmt: skip
    healthy_sim.set_faults(**faults)
    result = run(planned(model, kind))
    assert result.reason == reason, result.detail
    assert result.detail


@pytest.mark.parametrize("faults", [{"latency_multiplier": 500.0}, {"brownout_queue_stall": True}])
def test_slow_server_is_a_timeout(model: Model, healthy_sim: SimHandle, faults: dict[str, Any]) -> None:
    healthy_sim.set_faults(**faults)
    result = run(planned(model, "chat", timeout=0.3))
    assert result.reason == "timeout" and result.timings.e2e is not None and result.timings.e2e < 2.0


def test_closed_port_is_a_connect_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = load_model(write_config(tmp_path / "m.yaml", f"http://127.0.0.1:{port}"))
    assert run(planned(model, "chat")).reason == "connect_error"


def test_prompt_within_ceiling_rejected_is_context_rejected(tmp_path: Path) -> None:
    with running_simulator(**{**SIM_SETTINGS, "max_model_len": 2048}) as sim:  # type: ignore[arg-type]
        model = load_model(write_config(tmp_path / "m.yaml", sim.base_url))
        result = run(planned(model, "long_prompt"))
    assert result.reason == "context_rejected"


def test_server_accepting_prompts_over_the_class_ceiling_fails(tmp_path: Path) -> None:
    with running_simulator(**{**SIM_SETTINGS, "max_model_len": 16384}) as sim:  # type: ignore[arg-type]
        model = load_model(write_config(tmp_path / "m.yaml", sim.base_url))
        result = run(planned(model, "long_prompt"))
    assert result.reason == "wrong_answer" and result.extra["over_ceiling_rejected"] == 0.0


def test_long_prompt_reports_cold_and_warm_cache(model: Model) -> None:
    result = run(planned(model, "long_prompt"))
    assert result.ok, result.detail
    assert result.extra["cold_cached_tokens"] == 0.0
    assert result.extra["warm_cached_tokens"] >= result.extra["prompt_tokens"] - 128
    assert result.extra["over_ceiling_rejected"] == 1.0
    assert {"cold_ttft", "warm_ttft"} <= set(result.extra)


def test_reasoning_modes_and_split_timings(model: Model) -> None:
    result = run(planned(model, "reasoning"))
    assert result.ok, result.detail
    e = result.extra
    assert (e["enabled_reasoning_present"], e["disabled_reasoning_present"]) == (1.0, 0.0)
    t = result.timings
    assert t.first_reasoning is not None and t.ttft_answer is not None and t.first_reasoning <= t.ttft_answer
    assert result.usage.reasoning_tokens


def test_agent_session_times_every_turn(model: Model) -> None:
    result = run(planned(model, "agent_session"))
    assert result.ok, result.detail
    t = result.timings
    assert len(t.turn_ttft) == 3 and len(t.tool_turnaround) == 2  # 2 tool rounds + the final answer
    assert t.e2e is not None and t.e2e >= 2 * 0.010 + sum(t.turn_ttft)
