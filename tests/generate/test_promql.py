"""PromQL building blocks: le rendering per exporter, matchers, SLI expressions, burn factors."""

from __future__ import annotations

import dataclasses

import pytest

from monitor.generate import promql as q
from monitor.generate.sli import error_ratio
from monitor.generate.slo_rules import burn_condition
from monitor.model import Model, load_model


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


def test_server_latency_uses_vllm_le_and_pool(model: Model) -> None:
    slo = next(s for s in model.slos if s.request_class == "interactive-32k" and s.name == "ttft-p95")
    expr = error_ratio(model, slo, "5m")
    assert (
        'vllm:time_to_first_token_seconds_bucket{job="vllm",endpoint=~"m3-interactive",le="2.5"}[5m]' in expr
    )
    slo = next(s for s in model.slos if s.request_class == "repo-analysis-128k" and s.name == "queue-p95")
    assert 'le="5.0"' in error_ratio(model, slo, "1h")


def test_probe_slis(model: Model) -> None:
    avail = next(s for s in model.slos if s.request_class == "agent" and s.sli == "availability")
    expr = error_ratio(model, avail, "1h")
    assert 'reason=~"connect_error|timeout|http_status|stream_broken|context_rejected"' in expr
    corr = next(s for s in model.slos if s.request_class == "agent" and s.sli == "correctness")
    expr = error_ratio(model, corr, "1h")
    assert "wrong_answer" in expr and "malformed_tool_call" in expr
    # valid correctness events: answered runs only (neither unanswered nor monitor_error)
    assert 'reason!~"connect_error|timeout|http_status|stream_broken|context_rejected|monitor_error"' in expr
    assert 'reason!~"monitor_error"' in error_ratio(model, avail, "1h")  # not a service event
    ttft = next(s for s in model.slos if s.request_class == "interactive-32k" and s.name == "ttft-p99")
    assert 'm3mon_probe_ttft_seconds_bucket{job="m3mon",class="interactive-32k",le="5.0"}' in error_ratio(
        model, ttft, "5m"
    )


def test_ratios_are_counts_over_the_window_and_never_nan(model: Model) -> None:
    """Σbad / Σvalid of increase() over the window, filtered on valid > 0 (no 0/0)."""
    slo = next(s for s in model.slos if s.source == "server" and s.sli == "ttft")
    expr = error_ratio(model, slo, "30d")
    assert "increase(" in expr and "[30d]" in expr and "> 0)" in expr
    assert "avg_over_time" not in expr and "or vector(0)" not in expr


def test_server_threshold_off_bucket_edge_is_no_data_not_an_error(model: Model) -> None:
    """A threshold off the default edges may be an edge of a pool's custom buckets: the rules
    join per endpoint on the bucket (no bucket, no events) instead of refusing to generate."""
    slo = next(s for s in model.slos if s.source == "server" and s.sli == "ttft")
    expr = error_ratio(model, dataclasses.replace(slo, threshold=3.0), "5m")
    assert 'le="3.0"' in expr and "and on (endpoint)" in expr and "- on (endpoint)" in expr


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
    assert (
        "rate5m" in page_expr and "rate1h" in page_expr and "rate30m" in page_expr and "rate6h" in page_expr
    )
    assert "rate2h" in ticket_expr and "rate1d" in ticket_expr and "rate3d" in ticket_expr
