"""The round runner (isolation, timeouts, plan filters), the exporter metrics and ``m3mon probe``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor import probes
from monitor.cli import main
from monitor.conventions import AVAILABILITY_FAILURES, MONITOR_FAILURES
from monitor.errors import ProbeError
from monitor.model import Model
from monitor.probes.metrics import ProbeMetrics
from monitor.probes.result import ProbeResult
from monitor.probes.runner import PlannedProbe, plan_round, run_probe, run_round
from monitor.probes.target import ProbeSpec, Target
from monitor.sim.harness import SimHandle
from tests.probes.conftest import write_config

pytestmark = pytest.mark.timeout(60)


async def _boom(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    raise KeyError("unexpected shape")


async def _stuck(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    await asyncio.sleep(30)
    raise AssertionError("the runner's timeout should have cancelled this prober")


def _run_one(p: PlannedProbe, prober: probes.Prober) -> ProbeResult:
    async def go() -> ProbeResult:
        async with httpx.AsyncClient() as client:
            return await run_probe(p, client, prober)

    return asyncio.run(go())


def test_crashing_prober_is_a_monitor_error(model: Model, caplog: pytest.LogCaptureFixture) -> None:
    """A prober bug is the monitor's fault: monitor_error (no service SLI), never stream_broken."""
    (p,) = plan_round(model, kinds=["chat"])
    result = _run_one(p, _boom)
    assert (result.reason, result.crashed, result.ok) == ("monitor_error", True, False)
    assert result.reason in MONITOR_FAILURES and result.reason not in AVAILABILITY_FAILURES
    assert result.timings.e2e is None  # the time until the crash is no service latency
    assert "KeyError" in result.detail and "prober crashed" in caplog.text


def test_probe_over_its_timeout_is_the_services_timeout(model: Model) -> None:
    (p,) = plan_round(model, kinds=["chat"])
    short = dataclasses.replace(
        p, spec=dataclasses.replace(p.spec, plan=dataclasses.replace(p.spec.plan, timeout=0.2))
    )
    result = _run_one(short, _stuck)
    assert (result.reason, result.crashed) == ("timeout", False)
    assert result.reason in AVAILABILITY_FAILURES
    assert result.timings.e2e is not None and 0.2 <= result.timings.e2e < 5


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
    """Unanswered and monitor_error runs are counted by reason and give no latency (docs/slo-events.md)."""
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry, model.latency_buckets())
    healthy_sim.set_faults(error_rate=1.0)
    asyncio.run(run_round(model, kinds=["chat"], jitter=False, metrics=metrics))
    (p,) = plan_round(model, kinds=["chat"])
    metrics.observe(_run_one(p, _boom))
    text = generate_latest(registry).decode()
    assert 'kind="chat",reason="http_status",result="failure"} 1.0' in text
    assert 'kind="chat",reason="monitor_error",result="failure"} 1.0' in text
    assert 'm3mon_probe_ttft_seconds_count{class="small",endpoint="sim",kind="chat"}' not in text
    assert 'm3mon_probe_e2e_seconds_count{class="small",endpoint="sim",kind="chat"}' not in text


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


def test_cli_exit_status_for_monitor_errors(tmp_path: Path, healthy_sim: SimHandle, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Only crashed probers: exit 3 and a stderr line; a service failure as well: exit 1."""
    config = write_config(tmp_path / "m.yaml", healthy_sim.base_url, kinds="[chat, tool_call]")
    monkeypatch.setitem(probes.PROBERS, "chat", _boom)
    assert main(["probe", "-c", str(config), "--once", "--no-jitter"]) == 3
    captured = capsys.readouterr()
    assert "monitor_error" in captured.out and "tool_call" in captured.out
    assert "1 probe(s) failed with monitor_error" in captured.err and "bug in m3mon" in captured.err
    healthy_sim.set_faults(wrong_model="x/y")  # tool_call now fails through the service
    assert main(["probe", "-c", str(config), "--once", "--no-jitter"]) == 1
    assert "monitor_error" in capsys.readouterr().err
    monkeypatch.undo()
    assert main(["probe", "-c", str(config), "--once", "--no-jitter", "--kind", "chat"]) == 1
    assert "monitor_error" not in capsys.readouterr().err
