"""PrometheusRule objects: one per rule file the default target writes for the core Prometheus.

The groups come from :func:`monitor.generate.output.core_rule_groups`, rendered by the same
:meth:`~monitor.generate.rules.Group.render` as ``alerts/*.rules.yml``: the operator loads exactly
the groups (names, intervals, expressions, labels, annotations) Prometheus loads without it.
The fleet rule files are not emitted: this target deploys one monitor replica.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from monitor.generate.kubernetes.common import NAME, Options, dns_name, meta, operator_labels
from monitor.generate.output import core_rule_groups
from monitor.model import Model

API_VERSION = "monitoring.coreos.com/v1"


def rule_object_name(rule_file: str) -> str:
    """``alerts/slo-agent.rules.yml`` -> ``m3mon-slo-agent``."""
    stem = PurePosixPath(rule_file).name.removesuffix(".rules.yml")
    return dns_name(NAME, stem)


def prometheus_rules(model: Model, options: Options) -> dict[str, dict[str, Any]]:
    """``{default target's rule file: PrometheusRule}``."""
    out: dict[str, dict[str, Any]] = {}
    for rule_file, groups in core_rule_groups(model).items():
        out[rule_file] = {
            "apiVersion": API_VERSION,
            "kind": "PrometheusRule",
            "metadata": meta(
                rule_object_name(rule_file),
                operator_labels(options),
                annotations={"m3mon/rule-file": rule_file},
            ),
            "spec": {"groups": [g.render(model.alerting) for g in groups]},
        }
    return out
