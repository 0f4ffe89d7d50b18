"""``m3mon check-config --metrics`` prints the drift guard's findings, through the real CLI.

An SLO whose rules read a family the page does not serve is an error (exit 1: the SLO's pager is
blind); a family only alerts or dashboards read is a warning. Expectations from the reference
(vllm-surface.md §3.2): vLLM 0.8.5 predates ``inter_token_latency_seconds`` (0.10.2) and serves
``time_per_output_token_seconds``; 0.13.0 serves the new names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "monitor.yaml"
V085 = ROOT / "tests" / "fixtures" / "metrics" / "vllm-0.8.5.metrics.txt"
V013 = ROOT / "tests" / "fixtures" / "metrics" / "vllm-0.13.0.metrics.txt"


def _drift(capsys: pytest.CaptureFixture[str], page: Path) -> tuple[int, list[str]]:
    code = main(["check-config", str(EXAMPLE), "--metrics", f"m3-interactive={page}"])
    return code, [line for line in capsys.readouterr().out.splitlines() if " drift: " in line]


def test_an_slo_reading_a_name_the_server_predates_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = _drift(capsys, V085)
    assert code == 1
    itl = [line for line in lines if "vllm:inter_token_latency_seconds (renamed" in line]
    assert len(itl) == 1 and itl[0].startswith("error: drift: m3-interactive:")
    assert "SLO interactive-32k/itl-p95" in itl[0] and "vllm:time_per_output_token_seconds" in itl[0]
    kv = [line for line in lines if "vllm:kv_cache_usage_perc (renamed" in line]
    assert len(kv) == 1 and kv[0].startswith("warning: drift:")  # alerts and dashboards only


def test_a_current_server_serves_everything_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = _drift(capsys, V013)
    assert code == 0
    assert not [line for line in lines if line.startswith("error:")]
    (summary,) = [line for line in lines if line.startswith("ok: drift: m3-interactive:")]
    assert "families its rules, SLOs and dashboards read are served" in summary
