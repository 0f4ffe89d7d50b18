"""``VLLMEngineStalled`` reads every held generation's real names and labels.

For each complete ``/metrics`` page the fixtures hold (vLLM 0.8.5, 0.13, 0.33 with two engines and
three models; SGLang 0.5.23 and the 2024 docs page), every series of the five families the
stall reads, with the page's own labels, plays three scenes in the real promtool, on an endpoint
of the page's backend: the engine stops (fires within the bound), the engine moves (quiet), and
one long prefill runs alone, counting no token while KV-cache usage rises (quiet: this needs the
page's own KV family). Which family plays which part comes from the table below, written from the
engines' documented metric history (vLLM's ``gpu_cache_usage_perc`` until 0.11, then
``kv_cache_usage_perc``; SGLang's scheduler gauges), not from the collector's name map.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitor.generate.rules import Group, rule_file
from monitor.generate.stall_rules import stall_alerts
from monitor.model import load_model
from tests.generate.conftest import EXAMPLE, REPO
from tests.generate.test_detection_operational import _encode
from tests.generate.test_detection_stall import EVAL, promtool_case, promtool_fired

pytestmark = pytest.mark.timeout(120)

FIXTURES = REPO / "tests" / "fixtures" / "metrics"
ROLES = ("running", "waiting", "generation", "prompt", "kv")
VLLM = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total")  # fmt: skip
SGLANG = ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:generation_tokens_total",
          "sglang:prompt_tokens_total", "sglang:token_usage")  # fmt: skip
#: page -> (backend, the sample name of each role), from the documented history.
PAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "vllm-0.8.5.metrics.txt": ("vllm", (*VLLM, "vllm:gpu_cache_usage_perc")),
    "vllm-0.13.0.metrics.txt": ("vllm", (*VLLM, "vllm:kv_cache_usage_perc")),
    "vllm-0.33-3models-2engines.metrics.txt": ("vllm", (*VLLM, "vllm:kv_cache_usage_perc")),
    "sglang-0.5.23.metrics.txt": ("sglang", SGLANG),
    "sglang-docs-2024-llama3.1-8b-metrics.txt": ("sglang", SGLANG),
}
ENDPOINT = {"vllm": "m3-interactive", "sglang": "m3-repo"}  # both scraped every 15 s
START, END, BOUND = 300, 540, 2 * 15 + 30


def _page_series(page: str) -> dict[str, list[dict[str, str]]]:
    """role -> the label sets of its samples on ``page``."""
    _backend, names = PAGES[page]
    found: dict[str, list[dict[str, str]]] = {role: [] for role in ROLES}
    for family in text_string_to_metric_families((FIXTURES / page).read_text()):
        for sample in family.samples:
            if sample.name in names:
                found[ROLES[names.index(sample.name)]].append(dict(sample.labels))
    return found


def _value(role: str, scene: str, t: int) -> float:
    moving = scene == "moving" or (scene == "stall" and t < START)
    if role == "running":
        return 0.0 if scene == "prefill" and t < START else 1.0  # the prefill reaches an idle engine
    if role == "waiting":
        return 0.0
    if role == "kv":
        return 0.2 + (0.001 * (t - START) if scene == "prefill" and t >= START else 0.0)
    rate = 5.0 if role == "generation" else 50.0
    return rate * (t if moving else min(t, START) if scene == "stall" else 0.0)


def _scene(page: str, scene: str) -> list[dict[str, str]]:
    backend, names = PAGES[page]
    ep = ENDPOINT[backend]
    target = f'job="vllm",endpoint="{ep}",instance="127.0.0.1:8000"'
    series = []
    for role, label_sets in _page_series(page).items():
        name = names[ROLES.index(role)]
        for labels in label_sets:
            body = ",".join([target, *(f'{k}="{v}"' for k, v in sorted(labels.items()))])
            values = [_value(role, scene, t) for t in range(0, END + 1, 15)]
            series.append({"series": f"{name}{{{body}}}", "values": _encode(list[float | None](values))})
    series.append({"series": f"up{{{target}}}", "values": "1+0x36"})
    return series


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_family_of_the_table_is_on_the_page(page: str) -> None:
    found = _page_series(page)
    assert all(found[role] for role in ROLES), {r: len(v) for r, v in found.items()}


def test_the_stall_reads_every_generation(tmp_path: Path) -> None:
    base = load_model(REPO / EXAMPLE)
    model = dataclasses.replace(base, endpoints=tuple(
        dataclasses.replace(e, backend="sglang") if e.name == ENDPOINT["sglang"] else e for e in base.endpoints
    ))  # fmt: skip
    rules = tmp_path / "stall.rules.yml"
    rules.write_text(rule_file([Group("stall", alerts=tuple(stall_alerts(model)))], model.alerting, "test"))
    cases, endpoints = [], {}
    for page, (backend, _names) in PAGES.items():
        for scene in ("stall", "moving", "prefill"):
            name = f"{page}-{scene}"
            cases.append(promtool_case(name, "15s", _scene(page, scene), range(START - 30, END + 1, EVAL)))
            endpoints[name] = ENDPOINT[backend]
    fired = promtool_fired(rules, cases, endpoints, tmp_path)
    for page in PAGES:
        stall = fired[f"{page}-stall"]
        assert stall and START < stall[0] <= START + BOUND, f"{page}: stall fired at {stall}"
        assert fired[f"{page}-moving"] == [], page
        assert fired[f"{page}-prefill"] == [], page
