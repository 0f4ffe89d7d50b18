"""Every configuration rule has a bad file in tests/config/bad/ and an exact, user-facing message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import parse_config, parse_duration
from monitor.conventions import PROBE_KINDS, SLI_KINDS
from monitor.errors import ConfigError
from monitor.model import build_model, load_model

BAD = Path(__file__).parent / "bad"
EXAMPLE = Path(__file__).parents[2] / "examples" / "monitor.yaml"

EXPECTED = {
    "bad_api_key_env": ":8: endpoints[0].api_key_env: expected an environment variable name such as M3_API_KEY, got '1-bad name'",
    "bad_backend": ":5: endpoints[0].backend: expected 'vllm' or 'sglang', got 'tgi'",
    "bad_base_url": ":4: endpoints[0].base_url: expected an http:// or https:// URL, got '127.0.0.1:8000'",
    "exporter_port_out_of_range": ":11: exporter.listen: expected a port from 1 to 65535, got '127.0.0.1:99999'",
    "storage_unsupported_database": ":11: storage.url: expected a sqlite:/// or postgresql:// URL, got 'mysql://***@db:3306/m3mon'",
    "bad_duration": ":7: endpoints[0].scrape_interval: expected a duration such as 15s, 5m or 30d, got 'soon'",
    "bad_gpu_exporter_kind": ":10: endpoints[0].gpu_exporter.kind: expected 'auto', 'dcgm' or 'amd', got 'nvml'",
    "bad_gpu_exporter_url": ":8: endpoints[0].gpu_exporter.url: expected an http:// or https:// URL, "
    "got 'node-1:9400/metrics'",
    "bad_exporter_listen": ":15: exporter.listen: expected HOST:PORT such as 127.0.0.1:9464, got 'everywhere'",
    "bad_period": ":13: request_classes[0].slos[0].period: expected 28d or 30d, got 7d",
    "bad_sli": ":13: request_classes[0].slos[0].sli: expected 'availability', 'correctness', 'ttft', 'itl', 'tpot', 'e2e', 'queue_time', 'stall', 'ttft_cold', 'ttft_warm' or 'goodput', got 'vibes'",
    "class_unserved": ":15: request_classes[1].name: class 'batch' is served by no endpoint",
    "correctness_from_server": ":13: request_classes[0].slos[0]: correctness can only come from probes (source: probes)",
    "duplicate_endpoint": ":8: endpoints[1].name: duplicate name 'pool-a'",
    "duplicate_slo_name": ":9: request_classes[0]: duplicate SLO names: availability",
    "latency_without_threshold": ":14: request_classes[0].slos[1]: sli ttft needs a threshold (e.g. threshold: 2s)",
    "long_prompt_over_ceiling": ":9: request_classes[0]: probe.long_prompt_tokens must be below max_context_tokens",
    "maintenance_not_whole_minute": ":16: maintenance[0].start: maintenance boundaries are whole minutes, got 2026-12-06T02:00:30+00:00",
    "maintenance_overlap": ":15: maintenance[0]: occurrences overlap or touch (2026-12-06T02:00:00+00:00 and 2026-12-07T02:00:00+00:00 are 86400s apart, the window lasts 90000s); shorten the duration or make it one longer window",
    "maintenance_unknown_class": ":18: maintenance[0].classes[0]: unknown request class 'chat-64k'; known: chat-32k",
    "missing_endpoints": ":1: endpoints: required key is missing",
    "no_slos": ":12: request_classes[0].slos: expected at least 1 item(s), got none",
    "not_a_mapping": ": expected a mapping with 'version: m3mon/v1' at the top level",
    "not_yaml": ":4: not valid YAML: expected <block end>, but found '<block mapping start>'",
    "objective_out_of_range": ":13: request_classes[0].slos[0].objective: input should be less than 100, got 100",
    "retention_too_short": ":14: storage.retention: keep raw rows at least 1d (got 5400s): a window's ragged "
    "first hour is counted from its raw slices, and a late scrape reading splits its interval for a day",
    "threshold_without_unit": ":14: request_classes[0].slos[1].threshold: a latency needs its unit, e.g. 100ms or 100s; got the bare number 100",
    "threshold_on_availability": ":13: request_classes[0].slos[0]: sli availability takes no threshold",
    "unknown_class_ref": ":6: endpoints[0].classes[1]: unknown request class 'chat-64k'; known: chat-32k",
    "unknown_nested_key": ":8: endpoints[0].scrape_every: unknown key (not part of m3mon/v1)",
    "unknown_probe_kind": ":11: request_classes[0].probes[1]: expected 'chat', 'tool_call', 'image', 'long_prompt', 'reasoning' or 'agent_session', got 'teleport'",
    "unknown_top_key": ":15: colour: unknown key (not part of m3mon/v1)",
    "wrong_version": ":1: version: expected 'm3mon/v1', got 'm3mon/v0'",
}


def test_every_bad_file_has_an_expectation() -> None:
    assert sorted(p.stem for p in BAD.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_config_names_file_line_path_and_expectation(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = BAD / f"{name}.yaml"
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "m3mon: configuration error"
    assert err[1] == f"{path}{EXPECTED[name]}"


def test_all_problems_are_reported_at_once() -> None:
    text = (
        (BAD / "unknown_top_key.yaml")
        .read_text()
        .replace("backend", "x")
        .replace("objective: 99.9", "objective: 0")
    )
    with pytest.raises(ConfigError) as info:
        parse_config(text, "multi.yaml")
    assert len(info.value.problems) == 2
    assert all(p.startswith("multi.yaml:") for p in info.value.problems)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load_model(tmp_path / "absent.yaml")


def test_example_config_is_valid_and_summarised(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "valid m3mon/v1 configuration" in out
    for cls in ("interactive-32k", "repo-analysis-128k", "extended-context", "multimodal", "agent"):
        assert cls in out
    # a latency SLO counts an event good at threshold or below: ≤, as the burn rules' le= bucket edge
    assert "      - ttft-p95       ttft ≤ 2.5s objective 95% over 30d from server" in out.splitlines()
    assert "      - itl-p95        itl ≤ 0.1s objective 95% over 30d from server" in out.splitlines()
    assert not [line for line in out.splitlines() if line.startswith("      - ") and " < " in line]


def test_example_model_is_frozen_and_derived() -> None:
    model = load_model(EXAMPLE)
    interactive = model.request_class("interactive-32k")
    assert interactive.max_context_tokens == 32768
    assert interactive.probe.long_prompt_tokens == 30000
    ttft = next(s for s in interactive.slos if s.name == "ttft-p95")
    assert (ttft.threshold, ttft.objective, ttft.source, ttft.period_window) == (2.5, 0.95, "server", "30d")
    assert ttft.budget == pytest.approx(0.05)
    assert {e.name for e in model.endpoints_for("multimodal")} == {"m3-interactive"}
    assert 2.5 in model.latency_buckets() and 0.075 in model.latency_buckets()
    with pytest.raises(AttributeError):
        ttft.threshold = 3.0  # type: ignore[misc]


def test_api_key_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = load_model(EXAMPLE).endpoints[0]
    monkeypatch.delenv("M3_API_KEY", raising=False)
    assert endpoint.headers() == {}
    monkeypatch.setenv("M3_API_KEY", "sekret")
    assert endpoint.headers() == {"Authorization": "Bearer sekret"}


@pytest.mark.parametrize(
    ("text", "seconds"), [("250ms", 0.25), ("15s", 15), ("5m", 300), ("1h", 3600), ("30d", 2592000), (2, 2.0)]
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "-1s", "0s", "1y", True, None])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_config_literals_match_conventions() -> None:
    spec = parse_config(EXAMPLE.read_text())
    model = build_model(spec)
    assert {k for c in model.classes for k in c.probe.kinds} <= set(PROBE_KINDS)
    from monitor.config import RequestClassSpec, SLOSpec

    probe_kinds = RequestClassSpec.model_fields["probes"].annotation
    assert set(PROBE_KINDS) == set(probe_kinds.__args__[0].__args__)  # type: ignore[union-attr]
    assert set(SLI_KINDS) == set(SLOSpec.model_fields["sli"].annotation.__args__)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("exporter", "alerting", "base"),
    [
        ({}, {}, "http://127.0.0.1:9464/runbooks"),
        ({"listen": "10.0.0.5:9500"}, {}, "http://10.0.0.5:9500/runbooks"),
        ({"listen": "0.0.0.0:9464"}, {}, "http://127.0.0.1:9464/runbooks"),  # no browser opens 0.0.0.0
        ({"external_url": "https://m3mon.example.org/"}, {}, "https://m3mon.example.org/runbooks"),
        ({}, {"runbook_base_url": "https://wiki.example.org/rb/"}, "https://wiki.example.org/rb"),
    ],
)
def test_runbook_links_default_to_the_runbooks_the_monitor_serves(
    exporter: dict[str, str], alerting: dict[str, str], base: str
) -> None:
    text = (
        "version: m3mon/v1\n"
        "endpoints: [{name: a, base_url: 'http://127.0.0.1:8000', model: m, classes: [c]}]\n"
        "request_classes: [{name: c, max_context_tokens: 32768, probes: [chat],\n"
        "                   slos: [{name: availability, sli: availability, objective: 99}]}]\n"
        f"exporter: {json.dumps(exporter)}\nalerting: {json.dumps(alerting)}\n"
    )
    assert build_model(parse_config(text)).alerting.runbook_base_url == base


def test_external_url_must_be_a_url() -> None:
    text = (
        "version: m3mon/v1\n"
        "endpoints: [{name: a, base_url: 'http://127.0.0.1:8000', model: m, classes: [c]}]\n"
        "request_classes: [{name: c, max_context_tokens: 32768, probes: [chat],\n"
        "                   slos: [{name: availability, sli: availability, objective: 99}]}]\n"
        "exporter: {external_url: m3mon.example.org}\n"
    )
    with pytest.raises(ConfigError, match=r"exporter\.external_url: expected a value matching \^https"):
        parse_config(text)
