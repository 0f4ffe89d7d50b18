"""OpenSLO import: the spec's own examples, hand-written documents that map, and refusals by field.

Expectations are written by hand from the OpenSLO documents and docs/slo-events.md (which series
each SLI reads), never produced by the importer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.errors import ConfigError
from monitor.model import SLO, load_model
from monitor.openslo.importer import import_files

HERE = Path(__file__).parent
BASE = HERE / "configs" / "base.yaml"
GOLDEN = HERE / "golden"


def _refusals(paths: list[Path], base: Path | None = BASE) -> list[str]:
    with pytest.raises(ConfigError) as err:
        import_files(paths, base, "out.yaml")
    return err.value.problems


def _imported(tmp_path: Path, paths: list[Path]) -> tuple[SLO, ...]:
    out = tmp_path / "monitor.yaml"
    out.write_text(import_files(paths, BASE, str(out)), encoding="utf-8")
    return load_model(out).request_class("web").slos


def test_spec_v1_examples_are_read_and_every_unmappable_field_is_named() -> None:
    problems = _refusals(sorted((GOLDEN / "v1").glob("*.yaml")))
    v1 = str(GOLDEN / "v1")
    expected = [
        f"{v1}/slos.yaml#1 (SLO web-availability): spec.budgetingMethod: Timeslices budgeting is not supported",
        f"{v1}/slos.yaml#1 (SLO web-availability): spec.timeWindow[0].isRolling: calendar windows do not map",
        f"{v1}/timeslices-slo.yaml#1 (SLO service-availability): spec.objectives: m3mon SLOs have one objective, "
        "found 2",
        f"{v1}/occurences-slo.yaml#1 (SLO search-slo): spec.timeWindow[0].duration: expected a rolling 28d, 4w or "
        "30d period, got '2w'",
        f"{v1}/occurences-slo.yaml#1 (SLO search-slo): spec.objectives[0].op: latency SLOs count events at or under "
        "the threshold (lte), got 'lt'",
        f"{v1}/data_sources.yaml#2 (DataSource datadog): spec.type: a 'Datadog' data source does not map",
        f"{v1}/alert_conditions.yaml#1 (AlertCondition cpu-usage-breach): metadata.name: this AlertCondition is "
        "used by no SLO",
        f"{v1}/slis.yaml#1 (SLI search-availability): metadata.name: this SLI is used by no SLO",
        f"{v1}/services.yaml#2 (Service example-service): metadata.name: a second Service named 'example-service'",
    ]
    for line in expected:
        assert any(p.startswith(line) for p in problems), (line, problems)
    # the good/total web-availability SLO is refused for its Datadog-free PromQL too
    assert any("slos.yaml#1 (SLO web-availability): spec.indicator.spec.ratioMetric" in p for p in problems)


def test_spec_v1alpha_examples_are_read_and_refused_by_field() -> None:
    problems = _refusals(sorted((GOLDEN / "v1alpha").glob("*.yaml")))
    slos = str(GOLDEN / "v1alpha" / "slos.yaml")
    for line in (
        f"{slos}#1 (SLO web-latency-threshold): spec.timeWindows[0].isRolling: calendar windows do not map",
        f"{slos}#1 (SLO web-latency-threshold): spec.objectives[0].op: latency SLOs count events at or under",
        f"{slos}#2 (SLO web-availability-ratio): spec.budgetingMethod: Timeslices budgeting is not supported",
    ):
        assert any(p.startswith(line) for p in problems), (line, problems)


def test_hand_written_v1_documents_map_onto_server_and_probe_slis(tmp_path: Path) -> None:
    slos = _imported(tmp_path, [HERE / "foreign" / "v1-prometheus.yaml"])
    day = 86400.0
    assert slos == (
        SLO("web", "web-availability", "availability", 99.9 / 100, 28 * day, "server"),  # objective: 99.9 (%)
        SLO("web", "web-ttft", "ttft", 0.95, 30 * day, "server", 2.5,
            "P95 time to first token under 2.5 s, as the server measures it"),
        SLO("web", "web-probe-ttft", "ttft", 0.99, 30 * day, "probes", 5.0),
    )  # fmt: skip


def test_sloth_style_v1alpha_good_total_maps_onto_probe_availability(tmp_path: Path) -> None:
    slos = _imported(tmp_path, [HERE / "foreign" / "v1alpha-sloth.yaml"])
    assert slos == (
        SLO("web", "web-probe-availability", "availability", 0.995, 30 * 86400.0, "probes", None,
            "Probes that got an answer"),
    )  # fmt: skip


_SLO = """
apiVersion: openslo/v1
kind: SLO
metadata: {{name: s}}
spec:
  service: web
  indicator:
    metadata: {{name: i}}
    spec:
      ratioMetric:
        counter: true
        bad: {{metricSource: {{type: {kind}, spec: {{query: '{bad}'}}}}}}
        total: {{metricSource: {{type: {kind}, spec: {{query: '{total}'}}}}}}
  timeWindow: [{{duration: 30d, isRolling: true}}]
  budgetingMethod: Occurrences
  objectives: [{{target: 0.99}}]
  alertPolicies: {policies}
"""
_PROBE_TOTAL = 'sum(m3mon_probe_total{class="web",reason!~"monitor_error"})'
_PROBE_BAD = 'sum(m3mon_probe_total{class="web",reason=~"connect_error|timeout|http_status|stream_broken|context_rejected"})'
_POLICY = """
---
apiVersion: openslo/v1
kind: AlertPolicy
metadata: {name: p}
spec:
  alertWhenNoData: false
  alertWhenResolved: true
  alertWhenBreaching: true
  conditions:
    - kind: AlertCondition
      metadata: {name: c}
      spec: {severity: page, condition: {kind: burnrate, op: gt, threshold: 2, lookbackWindow: 1h, alertAfter: 5m}}
  notificationTargets: [{targetRef: pager}]
"""


@pytest.mark.parametrize(
    ("bad", "total", "kind", "field"),
    [
        ('sum(rate(http_requests_total{code=~"5.."}[5m]))', _PROBE_TOTAL, "Prometheus",
         "spec.indicator.spec.ratioMetric.bad.metricSource.spec.query: cannot attribute"),
        (_PROBE_BAD.replace('class="web"', 'class="web",kind="chat"'), _PROBE_TOTAL, "Prometheus",
         "spec.indicator.spec.ratioMetric.bad.metricSource.spec.query: cannot attribute"),
        (_PROBE_BAD.replace("web", "other"), _PROBE_TOTAL.replace("web", "other"), "Prometheus",
         "spec.indicator.spec.ratioMetric.bad.metricSource.spec.query: cannot attribute"),
        ("sum:requests{status:5xx}", "sum:requests{*}", "Datadog",
         "spec.indicator.spec.ratioMetric.total.metricSource.type: a Datadog query cannot feed an m3mon SLI"),
    ],
    ids=["foreign-metric", "narrowing-matcher", "other-class", "datadog"],
)  # fmt: skip
def test_queries_that_cannot_be_attributed_to_the_class_are_refused_by_field(
    tmp_path: Path, bad: str, total: str, kind: str, field: str
) -> None:
    doc = tmp_path / "slo.yaml"
    doc.write_text(_SLO.format(bad=bad, total=total, kind=kind, policies="[]"), encoding="utf-8")
    problems = _refusals([doc])
    assert [p.split(": ", 1)[1][: len(field)] for p in problems[1:]] == [field]


def test_the_same_slo_with_m3mon_queries_maps_but_a_second_alerting_scheme_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "slo.yaml"
    doc.write_text(_SLO.format(bad=_PROBE_BAD, total=_PROBE_TOTAL, kind="Prometheus", policies="[]"), "utf-8")
    assert _imported(tmp_path, [doc]) == (SLO("web", "s", "availability", 0.99, 30 * 86400.0, "probes"),)
    doc.write_text(
        _SLO.format(bad=_PROBE_BAD, total=_PROBE_TOTAL, kind="Prometheus", policies="[p]") + _POLICY
    )
    (problem,) = _refusals([doc])[1:]
    # 30d page rows are 14.4x over 1h/5m and 6x over 6h/30m: 2x over 1h/5m is neither
    assert (
        "spec.alertPolicies[0] conditions[0].spec.condition: severity 'page', 2x over 1h/5m is not one"
        in problem
    )


def test_an_endpoint_data_source_with_a_bad_field_is_refused_by_field(tmp_path: Path) -> None:
    doc = tmp_path / "ds.yaml"
    doc.write_text(
        "apiVersion: openslo/v1\nkind: DataSource\nmetadata: {name: pool}\n"
        "spec: {type: vLLM, connectionDetails: {base_url: 'ftp://x', model: m3, classes: [web]}}\n",
        encoding="utf-8",
    )
    (problem,) = _refusals([doc])[1:]
    assert problem.startswith(
        f"{doc}#1 (DataSource pool): spec.connectionDetails.base_url: String should match"
    )
