"""The round runner (isolation, timeouts, plan filters), the exporter metrics and ``m3mon probe``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor.cli import main
from monitor.errors import ProbeError
from monitor.model import Model
from monitor.probes.metrics import ProbeMetrics
from monitor.probes.result import ProbeResult
from monitor.probes.runner import plan_round, run_probe, run_round
from monitor.probes.target import ProbeSpec, Target
from monitor.sim.harness import SimHandle
from tests.probes.conftest import write_config

pytestmark = pytest.mark.timeout(60)


async def _boom(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    raise KeyError("unexpected shape")


def test_crashing_prober_becomes_a_failed_result(model: Model, caplog: pytest.LogCaptureFixture) -> None:
    (p,) = plan_round(model, kinds=["chat"])

    async def go() -> ProbeResult:
        async with httpx.AsyncClient() as client:
            return await run_probe(p, client, _boom)

    result = asyncio.run(go())
    assert (result.reason, result.crashed) == ("stream_broken", True)
    assert "KeyError" in result.detail and "prober crashed" in caplog.text


def test_round_runs_every_kind_and_feeds_metrics(model: Model) -> None:
    registry = CollectorRegistry()
    metrics = ProbeMetrics.for_model(registry, model)
    before = generate_latest(registry).decode()
    assert (
        'm3mon_probe_total{class="small",endpoint="sim",kind="image",reason="none",result="success"} 0.0'
        in before
    )
    results = asyncio.run(run_round(model, jitter=False, metrics=metrics, concurrency=2))
    assert [r.kind for r in results] == list(model.request_class("small").probe.kinds)
    assert all(r.ok for r in results), [(r.kind, r.reason, r.detail) for r in results]
    text = generate_latest(registry).decode()
    assert (
        'm3mon_probe_total{class="small",endpoint="sim",kind="chat",reason="none",result="success"} 1.0'
        in text
    )
    assert 'm3mon_probe_ttft_seconds_bucket{class="small",endpoint="sim",kind="chat",le="2.5"} 1.0' in text
    assert (
        'm3mon_probe_tool_turnaround_seconds_count{class="small",endpoint="sim",kind="agent_session"} 2.0'
        in text
    )
    for cache in ("cold", "warm"):
        assert (
            f'm3mon_probe_long_prompt_ttft_seconds_count{{cache="{cache}",class="small",endpoint="sim",'
            f'kind="long_prompt"}} 1.0' in text
        )
    types = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert types["m3mon_probe"] == "counter"
    assert types["m3mon_probe_ttft_seconds"] == types["m3mon_probe_tool_turnaround_seconds"] == "histogram"
    assert {t for n, t in types.items() if n.startswith("m3mon_probe") and "created" not in n} == {
        "counter",
        "histogram",
    }


def test_failures_are_counted_by_reason_and_skip_latency(model: Model, healthy_sim: SimHandle) -> None:
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry, model.latency_buckets())
    healthy_sim.set_faults(wrong_model="x/y")
    asyncio.run(run_round(model, kinds=["chat"], jitter=False, metrics=metrics))
    text = generate_latest(registry).decode()
    assert 'kind="chat",reason="wrong_model",result="failure"} 1.0' in text
    assert 'm3mon_probe_ttft_seconds_count{class="small",endpoint="sim",kind="chat"}' not in text


def test_unknown_class_or_kind_is_rejected(model: Model) -> None:
    with pytest.raises(ProbeError, match="nope"):
        plan_round(model, classes=["nope"])
    with pytest.raises(ProbeError, match="bogus"):
        plan_round(model, kinds=["bogus"])


def test_cli_table_json_and_exit_status(tmp_path: Path, healthy_sim: SimHandle,
                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    config = write_config(tmp_path / "m.yaml", healthy_sim.base_url, kinds="[chat, tool_call]")
    assert main(["probe", "-c", str(config), "--once", "--no-jitter"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:4] == ["endpoint", "class", "kind", "verdict"] and "tool_call" in out
    healthy_sim.set_faults(empty_output=True)
    assert main(["probe", "-c", str(config), "--once", "--no-jitter", "--kind", "chat", "--json"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    row = json.loads(line)
    assert (row["kind"], row["reason"], row["ok"]) == ("chat", "empty_output", False)
    assert main(["probe", "-c", str(config), "--once", "--class", "missing"]) == 2
    assert main(["probe", "-c", str(tmp_path / "absent.yaml"), "--once"]) == 2
