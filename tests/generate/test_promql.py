"""PromQL building blocks: le rendering per exporter, matchers, SLI expressions, burn factors."""

from __future__ import annotations

import dataclasses

import pytest

from monitor.generate import promql as q
from monitor.generate.sli import cumulative, step_events
from monitor.generate.slo_rules import burn_condition, recording_rules
from monitor.model import SLO, Model, load_model


@pytest.fixture(scope="module")
def model() -> Model:
    return load_model("examples/monitor.yaml")


@pytest.mark.parametrize(
    ("edge", "python", "go"),
    [
        (2.5, "2.5", "2.5"),
        (5.0, "5.0", "5"),
        (0.1, "0.1", "0.1"),
        (2560, "2560.0", "2560"),
        (0.075, "0.075", "0.075"),
        (float("inf"), "+Inf", "+Inf"),
    ],
)
def test_le_rendering_matches_each_exporter(edge: float, python: str, go: str) -> None:
    assert q.le_python_client(edge) == python
    assert q.le_go_client(edge) == go


def test_python_client_le_matches_prometheus_client_exposition() -> None:
    from prometheus_client import CollectorRegistry, Histogram, generate_latest

    reg = CollectorRegistry()
    edges = (0.1, 2.5, 5.0, 120.0)
    Histogram("x_seconds", "x", buckets=edges, registry=reg).observe(1)
    text = generate_latest(reg).decode()
    for e in edges:
        assert f'le="{q.le_python_client(e)}"' in text


def test_regex_matcher_escapes_dots() -> None:
    assert q.regex(["a.b", "c"]) == '=~"a\\\\.b|c"'


def _events(model: Model, slo: SLO) -> str:
    """Every expression of the SLO's events: cumulative readings and the step's valid and bad."""
    c = cumulative(model, slo)
    return "\n".join([c.valid, c.bad, step_events(model, slo, "valid"), step_events(model, slo, "bad")])


def test_server_latency_uses_vllm_le_and_pool(model: Model) -> None:
    slo = next(s for s in model.slos if s.request_class == "interactive-32k" and s.name == "ttft-p95")
    expr = _events(model, slo)
    assert 'vllm:time_to_first_token_seconds_bucket{job="vllm",endpoint=~"m3-interactive",le="2.5"}' in expr
    slo = next(s for s in model.slos if s.request_class == "repo-analysis-128k" and s.name == "queue-p95")
    assert 'le="5.0"' in _events(model, slo)


def test_probe_slis(model: Model) -> None:
    avail = next(s for s in model.slos if s.request_class == "agent" and s.sli == "availability")
    expr = _events(model, avail)
    assert 'reason=~"connect_error|timeout|http_status|stream_broken|context_rejected"' in expr
    corr = next(s for s in model.slos if s.request_class == "agent" and s.sli == "correctness")
    expr = _events(model, corr)
    assert "wrong_answer" in expr and "malformed_tool_call" in expr
    # valid correctness events: answered runs only (neither unanswered nor monitor_error)
    assert 'reason!~"connect_error|timeout|http_status|stream_broken|context_rejected|monitor_error"' in expr
    assert 'reason!~"monitor_error"' in _events(model, avail)  # not a service event
    ttft = next(s for s in model.slos if s.request_class == "interactive-32k" and s.name == "ttft-p99")
    assert 'm3mon_probe_ttft_seconds_bucket{job="m3mon",class="interactive-32k",le="5.0"}' in _events(
        model, ttft
    )


def test_ratios_are_counts_over_the_window_and_never_nan(model: Model) -> None:
    """Σbad / Σvalid of the window's step records, filtered on valid > 0 (no 0/0), never increase()
    (it extrapolates to the window's edges) and never an average of ratios."""
    slo = next(s for s in model.slos if s.source == "server" and s.sli == "ttft")
    rules = {r["record"]: r["expr"] for r in recording_rules(model, slo).records if r["labels"]}
    ratio = rules["m3mon:slo_error_ratio:rate30d"]
    assert ratio.startswith("sum_over_time(m3mon:slo_events_bad:step{")
    assert "sum_over_time(m3mon:slo_events_valid:step{" in ratio and "[2591970s]) > 0)" in ratio
    text = "\n".join(rules.values())
    assert "increase(" not in text and "avg_over_time" not in text
    assert "or vector(0)" not in cumulative(model, slo).bad  # never on the threshold bucket (issue #11)


def test_server_threshold_off_bucket_edge_is_no_data_not_an_error(model: Model) -> None:
    """A threshold off the default edges may be an edge of a pool's custom buckets: the rules
    join per endpoint on the bucket (no bucket, no events) instead of refusing to generate."""
    slo = next(s for s in model.slos if s.source == "server" and s.sli == "ttft")
    c = cumulative(model, dataclasses.replace(slo, threshold=3.0))
    assert 'le="3.0"' in c.valid and "and on (job, instance, endpoint)" in c.valid
    assert "- on (job, instance, endpoint)" in c.bad


@pytest.mark.parametrize(
    ("days", "page", "ticket"),
    [(30, ("14.4", "6"), ("3", "1")), (28, ("13.44", "5.6"), ("2.8", "0.933333333333"))],
)
def test_burn_factors_follow_the_period(
    model: Model, days: int, page: tuple[str, ...], ticket: tuple[str, ...]
) -> None:
    slo = dataclasses.replace(model.slos[0], period=days * 86400.0)
    page_expr, ticket_expr = burn_condition(slo, "page"), burn_condition(slo, "ticket")
    for f in page:
        assert f"({f} * 0.001)" in page_expr
    for f in ticket:
        assert f"({f} * 0.001)" in ticket_expr
    # each window: the step records of (t - W, t], half a step short of W (windows.inside)
    assert all(f"[{s}s]" in page_expr for s in (270, 3570, 1770, 21570)), page_expr
    assert all(f"[{s}s]" in ticket_expr for s in (7170, 86370, 259170)), ticket_expr
