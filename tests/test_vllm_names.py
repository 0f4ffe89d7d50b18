"""The vLLM names the generated rules query agree with real vLLM, the simulator and the collector.

vLLM's names are an outside fact written down three times, for three jobs: ``conventions`` (what
the generated rules and dashboards query), the simulator (what it exposes) and the collector's
name table (what it reads, across generations). This test keeps the three in step with the page
vLLM 0.13.0's own metrics code rendered (``tests/fixtures/metrics``, generated, not quoted).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from monitor import conventions as c
from monitor.scrape.names import SOURCES
from monitor.sim.config import SimConfig
from monitor.sim.metrics import SimMetrics

REAL_PAGE = Path(__file__).parent / "fixtures" / "metrics" / "vllm-0.13.0.metrics.txt"
CONSTANTS = {k: v for k, v in vars(c).items() if k.startswith("VLLM_") and str(v).startswith("vllm:")}
#: Families the generated rules use but the collector has no reason to read.
NOT_COLLECTED = {
    "vllm:cache_config_info",
    "vllm:iteration_tokens_total",
    "vllm:request_max_num_generation_tokens",
}


def _sample_names(text: str) -> set[str]:
    names = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def _exposes(names: set[str], family: str) -> bool:
    return family in names or {f"{family}_bucket", f"{family}_count", f"{family}_sum"} <= names


def test_there_are_constants_to_check() -> None:
    assert len(CONSTANTS) >= 20


@pytest.mark.parametrize("name", sorted(CONSTANTS.values()))
def test_real_vllm_exposes_every_name_the_rules_query(name: str) -> None:
    assert _exposes(_sample_names(REAL_PAGE.read_text()), name)


@pytest.mark.parametrize("name", sorted(CONSTANTS.values()))
def test_the_simulator_exposes_it(name: str) -> None:
    page = generate_latest(SimMetrics(SimConfig()).registry).decode()
    assert _exposes(_sample_names(page), name)


@pytest.mark.parametrize("name", sorted(set(CONSTANTS.values()) - NOT_COLLECTED))
def test_the_collector_reads_it_as_its_newest_name(name: str) -> None:
    ranks = {s.rank for s in SOURCES if s.metric == name}
    assert ranks == {0}, f"{name} is not a rank-0 row of monitor/scrape/names.py"


def test_the_exemptions_are_real() -> None:
    assert set(CONSTANTS.values()) >= NOT_COLLECTED
