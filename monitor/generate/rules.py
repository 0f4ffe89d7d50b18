"""Prometheus rule objects and their YAML form, shared by the SLO and operational generators."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from monitor.model_service import Alerting


@dataclass(frozen=True)
class Alert:
    """One alerting rule before routing labels and the runbook link are attached."""

    name: str
    expr: str
    severity: str  # "page", "ticket" or "info" (routed to the monitor's receiver only)
    summary: str
    description: str
    for_: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()  # more, after the description

    def rule(self, alerting: Alerting) -> dict[str, Any]:
        """The rule as Prometheus reads it, with severity labels from the config and a runbook URL."""
        routing = {"page": alerting.page_labels, "ticket": alerting.ticket_labels}.get(self.severity, ())
        labels = {"severity": self.severity, **dict(routing), **dict(self.labels)}
        out: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_:
            out["for"] = self.for_
        out["labels"] = labels
        out["annotations"] = {
            "summary": self.summary,
            "description": self.description,
            **dict(self.annotations),
            "runbook_url": runbook_url(alerting, self.name),
        }
        return out


@dataclass(frozen=True)
class Group:
    """A named rule group: recording rules (``record``/``expr``/``labels``) and alerts."""

    name: str
    records: tuple[dict[str, Any], ...] = ()
    alerts: tuple[Alert, ...] = ()
    interval: str | None = None

    def render(self, alerting: Alerting) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.interval:
            out["interval"] = self.interval
        out["rules"] = [*self.records, *(a.rule(alerting) for a in self.alerts)]
        return out


def runbook_url(alerting: Alerting, alert_name: str) -> str:
    """``{runbook_base_url}/<AlertName>.md``."""
    return f"{alerting.runbook_base_url}/{alert_name}.md"


def record(name: str, expr: str, labels: dict[str, str]) -> dict[str, Any]:
    """One recording rule."""
    return {"record": name, "expr": expr, "labels": labels}


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (PromQL) as literal blocks and never emits YAML aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any, banner: str) -> str:
    """YAML text headed by ``# banner``; key order preserved, no line wrapping."""
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=1000, allow_unicode=True)
    return f"# {banner}\n{body}"


def rule_file(groups: list[Group], alerting: Alerting, banner: str) -> str:
    """A whole Prometheus rule file."""
    return dump_yaml({"groups": [g.render(alerting) for g in groups]}, banner)
