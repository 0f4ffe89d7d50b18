"""OpenSLO import: the ``job``, ``endpoint`` and ``class`` matchers must select this class's series.

The m3mon rules read probe SLIs from the monitor's job (``class`` label of the class) and server
SLIs from the vLLM job, restricted to the endpoints that serve the class (docs/slo-events.md); a
query whose scope matchers name other series is refused by file, document and field. The
expected lines are written by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.errors import ConfigError
from monitor.model import SLO, load_model
from monitor.openslo.importer import import_files

HERE = Path(__file__).parent
BASE = HERE / "configs" / "base.yaml"  # web-pool serves web, and the other classes of the base

_RATIO = """apiVersion: openslo/v1
kind: SLO
metadata: {{name: s}}
spec:
  service: web
  indicator:
    metadata: {{name: i}}
    spec:
      ratioMetric:
        counter: true
        bad: {{metricSource: {{type: Prometheus, spec: {{query: '{bad}'}}}}}}
        total: {{metricSource: {{type: Prometheus, spec: {{query: '{total}'}}}}}}
  timeWindow: [{{duration: 30d, isRolling: true}}]
  budgetingMethod: Occurrences
  objectives: [{{target: 0.99}}]
"""
_THRESHOLD = """apiVersion: openslo/v1
kind: SLO
metadata: {{name: t}}
spec:
  service: web
  indicator:
    metadata: {{name: i}}
    spec:
      thresholdMetric: {{metricSource: {{type: Prometheus, spec: {{query: '{query}'}}}}}}
  timeWindow: [{{duration: 30d, isRolling: true}}]
  budgetingMethod: Occurrences
  objectives: [{{op: lte, value: 5, target: 0.99}}]
"""
# Endpoints from DataSource documents (they replace the base's): pool-a and pool-b serve web.
_POOLS = "".join(
    f"---\napiVersion: openslo/v1\nkind: DataSource\nmetadata: {{name: {name}}}\nspec: {{type: vLLM, "
    f"connectionDetails: {{base_url: 'http://10.0.0.{i}:8000', model: m3, classes: [{classes}]}}}}\n"
    for i, (name, classes) in enumerate(
        [("pool-a", "web"), ("pool-b", "web"), ("shop-pool", "web-shop, web-availability, example-service")]
    )
)
_SCOPE = 'job="vllm",endpoint=~"pool-a|pool-b"'
_TOTAL = 'sum(rate(vllm:request_success_total{%s,finished_reason!="abort"}[5m]))'
_BAD = 'sum(rate(vllm:request_success_total{%s,finished_reason="error"}[5m]))'
_PROBE_TTFT = "sum by (le) (rate(m3mon_probe_ttft_seconds_bucket{%s}[5m]))"
_RATIO_FIELD = "spec.indicator.spec.ratioMetric.{}.metricSource.spec.query"
_THRESHOLD_FIELD = "spec.indicator.spec.thresholdMetric.metricSource.spec.query"
_WEB_POOLS = '(class "web" is served by "pool-a", "pool-b")'
_FOREIGN = "names other series than this class's"


def _refusals(paths: list[Path], base: Path = BASE) -> list[str]:
    with pytest.raises(ConfigError) as err:
        import_files(paths, base, "out.yaml")
    assert err.value.problems[0] == "OpenSLO documents that do not map onto m3mon/v1:"
    return err.value.problems[1:]


def _imported(tmp_path: Path, doc: Path) -> tuple[SLO, ...]:
    out = tmp_path / "monitor.yaml"
    out.write_text(import_files([doc], BASE, str(out)), encoding="utf-8")
    return load_model(out).request_class("web").slos


def _ratio(tmp_path: Path, total: str, bad: str) -> Path:
    doc = tmp_path / "slo.yaml"
    doc.write_text(_RATIO.format(total=_TOTAL % total, bad=_BAD % bad) + _POOLS, encoding="utf-8")
    return doc


def _threshold(tmp_path: Path, scope: str, metric: str = _PROBE_TTFT) -> Path:
    doc = tmp_path / "slo.yaml"
    doc.write_text(_THRESHOLD.format(query=metric % scope), encoding="utf-8")
    return doc


@pytest.mark.parametrize(
    ("total", "bad", "refused"),
    [
        ('job="staging-vllm"', _SCOPE, [("total", f'job="staging-vllm" {_FOREIGN} (the vLLM job is "vllm")')]),
        (_SCOPE, 'job="vllm",endpoint="some-other-cluster"',
         [("bad", f'endpoint="some-other-cluster" {_FOREIGN} {_WEB_POOLS}')]),
        ('job="vllm",endpoint!="shop-pool"', _SCOPE,
         [("total", f'endpoint!="shop-pool" {_FOREIGN} (a negative matcher selects every other endpoint; '
                    'class "web" is served by "pool-a", "pool-b")')]),
        (_SCOPE, 'job="vllm",endpoint=~"pool-a|shop-pool"',
         [("bad", f'endpoint=~"pool-a|shop-pool" {_FOREIGN} {_WEB_POOLS}')]),
        (_SCOPE, 'job="staging-vllm", endpoint="some-other-cluster"',
         [("bad", f'job="staging-vllm" {_FOREIGN} (the vLLM job is "vllm")'),
          ("bad", f'endpoint="some-other-cluster" {_FOREIGN} {_WEB_POOLS}')]),
        ('job!="m3mon"', _SCOPE, [("total", f'job!="m3mon" {_FOREIGN} (the vLLM job is "vllm")')]),
        ('job=~"vllm|staging-vllm"', 'job=~"vllm"',
         [("total", f'job=~"vllm|staging-vllm" {_FOREIGN} (the vLLM job is "vllm")')]),
        (_SCOPE, 'job="vllm",class="web-shop"', [("bad", f'class="web-shop" {_FOREIGN} (the class is "web")')]),
    ],
    ids=["foreign-job", "foreign-endpoint", "negative-endpoint", "regex-with-a-foreign-endpoint",
         "job-and-endpoint-of-another-cluster", "negative-job", "regex-job", "class-on-vllm-series"],
)  # fmt: skip
def test_a_ratio_query_naming_other_series_is_refused_by_field(
    tmp_path: Path, total: str, bad: str, refused: list[tuple[str, str]]
) -> None:
    doc = _ratio(tmp_path, total, bad)
    expected = [f"{doc}#1 (SLO s): {_RATIO_FIELD.format(which)}: {why}" for which, why in refused]
    assert _refusals([doc]) == expected


@pytest.mark.parametrize(
    ("scope", "why"),
    [
        ('job="vllm",class="web"', f'job="vllm" {_FOREIGN} (the monitor\'s job is "m3mon")'),
        ('class="web",endpoint="other"', f'endpoint="other" {_FOREIGN} (class "web" is served by "web-pool")'),
        ('class="web",endpoint!~"other"',
         f'endpoint!~"other" {_FOREIGN} (a negative matcher selects every other endpoint; class "web" is '
         'served by "web-pool")'),
        ('job="m3mon",class="web",endpoint=~"web-pool|other"',
         f'endpoint=~"web-pool|other" {_FOREIGN} (class "web" is served by "web-pool")'),
    ],
    ids=["foreign-job", "foreign-endpoint", "negative-endpoint", "regex-with-a-foreign-endpoint"],
)  # fmt: skip
def test_a_threshold_query_naming_other_series_is_refused_by_field(
    tmp_path: Path, scope: str, why: str
) -> None:
    doc = _threshold(tmp_path, scope)
    assert _refusals([doc]) == [f"{doc}#1 (SLO t): {_THRESHOLD_FIELD}: {why}"]


def test_a_probe_bad_query_without_the_class_reads_every_class_and_is_refused(tmp_path: Path) -> None:
    total = 'sum(m3mon_probe_total{class="web",reason!~"monitor_error"})'
    bad = 'sum(m3mon_probe_total{reason=~"connect_error|timeout|http_status|stream_broken|context_rejected"})'
    doc = tmp_path / "slo.yaml"
    doc.write_text(_RATIO.format(total=total, bad=bad), encoding="utf-8")
    assert _refusals([doc]) == [
        f"{doc}#1 (SLO s): {_RATIO_FIELD.format('bad')}: no class matcher: the query reads the probe "
        'series of every class (add class="web")'
    ]


def test_the_jobs_come_from_the_base_configurations_alerting(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    jobs = "alerting: {prometheus_job_vllm: vllm-prod, prometheus_job_monitor: m3mon-prod}\n"
    base.write_text(BASE.read_text(encoding="utf-8") + jobs, encoding="utf-8")
    doc = _ratio(tmp_path, 'job="vllm"', 'job="vllm-prod"')
    assert _refusals([doc], base) == [
        f'{doc}#1 (SLO s): {_RATIO_FIELD.format("total")}: job="vllm" {_FOREIGN} (the vLLM job is "vllm-prod")'
    ]
    doc = _threshold(tmp_path, 'job="m3mon-prod",class="web"')
    assert import_files([doc], base, "out.yaml")  # the monitor's job of this base


def test_the_right_job_and_some_of_the_class_s_endpoints_still_import(tmp_path: Path) -> None:
    doc = _ratio(tmp_path, 'job="vllm",endpoint="pool-b"', 'job=~"vllm",endpoint=~"pool-b|pool-a"')
    assert _imported(tmp_path, doc) == (SLO("web", "s", "availability", 0.99, 30 * 86400.0, "server"),)
    doc = _threshold(tmp_path, 'job="m3mon",class="web",endpoint=~"web-pool"')
    assert _imported(tmp_path, doc) == (SLO("web", "t", "ttft", 0.99, 30 * 86400.0, "probes", 5.0),)
