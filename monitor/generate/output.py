"""Everything ``m3mon generate`` writes, as ``{relative path: text}``, and writing it atomically.

Files are produced in memory first; only when every generator succeeded are they written, each
through a temporary file and a rename, so a bad config never leaves half a set behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from monitor import conventions as cv
from monitor.fleet.layout import fleet_layout
from monitor.generate.alertmanager import alertmanager_config
from monitor.generate.compose import compose_file
from monitor.generate.dashboards import all_dashboards
from monitor.generate.exhaustion import exhaustion_groups
from monitor.generate.fleet_rules import fleet_files, fleet_groups
from monitor.generate.maintenance_rules import maintenance_groups
from monitor.generate.operational_rules import operational_groups
from monitor.generate.prometheus_config import prometheus_config
from monitor.generate.promtool_tests import operational_tests, slo_tests
from monitor.generate.provisioning import dashboard_provisioning, datasource_provisioning
from monitor.generate.rules import Group, dump_yaml, rule_file
from monitor.generate.runbooks import render_runbooks
from monitor.generate.slo_rules import slo_groups
from monitor.model import Model

OPERATIONAL_RULES = "alerts/operational.rules.yml"


def slo_rule_file(request_class: str) -> str:
    """One SLO rule file per request class: its promtool tests then evaluate only its rules."""
    return f"alerts/slo-{request_class}.rules.yml"


def alert_names(model: Model) -> list[str]:
    """Every alert some generated rule file holds: each needs a runbook."""
    groups = (
        slo_groups(model)
        + exhaustion_groups(model)
        + operational_groups(model)
        + maintenance_groups(model)
        + fleet_groups(fleet_layout(model))
    )
    return [a.name for g in groups for a in g.alerts]


def core_rule_groups(model: Model) -> dict[str, list[Group]]:
    """The rule files the core Prometheus loads (``alerts/*.rules.yml``) and their groups: the
    operational file and one SLO file per request class. The fleet files are not among them."""
    out = {OPERATIONAL_RULES: operational_groups(model) + maintenance_groups(model)}
    for rc in model.classes:
        out[slo_rule_file(rc.name)] = slo_groups(model, rc.name) + exhaustion_groups(model, rc.name)
    return out


def rendered_files(model: Model, source: str, config_text: str) -> dict[str, str]:
    """Every generated file's text, keyed by its path relative to the output directory."""
    banner = cv.DO_NOT_EDIT.format(source=source)
    a = model.alerting
    files = {
        "alerts/alertmanager.yml": dump_yaml(alertmanager_config(model), banner),
        "alerts/tests/operational.test.yml": dump_yaml(operational_tests(model), banner),
        "deploy/prometheus.yml": dump_yaml(
            prometheus_config(model, ["/etc/prometheus/rules/*.rules.yml"]), banner
        ),
        "deploy/monitor.yaml": f"# {banner}\n{config_text}",
        "dashboards/provisioning/datasources/prometheus.yml": dump_yaml(datasource_provisioning(), banner),
        "dashboards/provisioning/dashboards/m3mon.yml": dump_yaml(dashboard_provisioning(), banner),
        "compose.yaml": dump_yaml(compose_file(model), banner),
    }
    files.update(fleet_files(model, banner))
    for rules, groups in core_rule_groups(model).items():
        files[rules] = rule_file(groups, a, banner)
    for rc in model.classes:
        rules = slo_rule_file(rc.name)
        tests = slo_tests(model, rc.name, f"../{Path(rules).name}")
        if tests["tests"]:
            files[f"alerts/tests/slo-{rc.name}.test.yml"] = dump_yaml(tests, banner)
    for name, text in render_runbooks(alert_names(model), banner).items():
        files[f"alerts/runbooks/{name}.md"] = text
    for uid, dashboard in all_dashboards(model).items():
        files[f"dashboards/{uid}.json"] = json.dumps(dashboard, indent=2, sort_keys=True) + "\n"
    return files


#: Mode of every generated file: readable by the services that mount them, writable by their owner.
READABLE = 0o644


def write_files(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write ``files`` under ``out_dir`` (each atomically); return the paths written."""
    written = []
    for rel, text in sorted(files.items()):
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            # mkstemp makes 0600; Prometheus and Alertmanager (user nobody) and Grafana (uid 472)
            # read these files from a mounted volume
            os.chmod(tmp, READABLE)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(path)
    return written
