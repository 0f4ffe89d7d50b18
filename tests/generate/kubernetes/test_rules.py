"""The PrometheusRules hold exactly the rule files the core Prometheus loads in the default target
(the files its ``deploy/prometheus.yml`` ``rule_files`` glob matches), group for group, and the
groups taken out of them pass ``promtool check rules``."""

from __future__ import annotations

import fnmatch
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.generate.kubernetes.conftest import objects, of_kind
from tests.support.real import require_binary

RULES_MOUNT = "/etc/prometheus/rules/"  # where compose.yaml mounts alerts/


def _loaded_by_prometheus(default: Path) -> dict[str, list[dict[str, Any]]]:
    """``{alerts/<file>: groups}`` for every rule file the default target's Prometheus loads."""
    config = yaml.safe_load((default / "deploy/prometheus.yml").read_text())
    out = {}
    for path in sorted((default / "alerts").rglob("*.yml")):
        inside = RULES_MOUNT + path.relative_to(default / "alerts").as_posix()
        folder, name = inside.rsplit("/", 1)
        # Go's filepath.Glob: '*' never crosses a '/'
        if any(g.rsplit("/", 1)[0] == folder and fnmatch.fnmatchcase(name, g.rsplit("/", 1)[1])
               for g in config["rule_files"]):  # fmt: skip
            out[path.relative_to(default).as_posix()] = yaml.safe_load(path.read_text())["groups"]
    return out


def _rules(k8s: Path) -> list[dict[str, Any]]:
    return of_kind(objects(k8s / "monitoring"), "PrometheusRule")


def test_rule_objects_hold_the_default_targets_rule_files(case: tuple[Path, Path, Path]) -> None:
    _, default, k8s = case
    expected = _loaded_by_prometheus(default)
    assert len(expected) >= 2  # operational + one per class
    got = {r["metadata"]["annotations"]["m3mon/rule-file"]: r["spec"]["groups"] for r in _rules(k8s)}
    assert got == expected


def test_group_names_are_unique_across_objects(case: tuple[Path, Path, Path]) -> None:
    """The operator loads every PrometheusRule into one Prometheus: a group name twice is refused."""
    names = [g["name"] for r in _rules(case[2]) for g in r["spec"]["groups"]]
    assert len(names) == len(set(names))


def test_promtool_checks_the_extracted_rules(case: tuple[Path, Path, Path], tmp_path: Path) -> None:
    promtool = require_binary("promtool", "/usr/bin/promtool")
    files = []
    for r in _rules(case[2]):
        path = tmp_path / f"{r['metadata']['name']}.yml"
        path.write_text(yaml.safe_dump({"groups": r["spec"]["groups"]}))
        files.append(str(path))
    proc = subprocess.run([promtool, "check", "rules", *files], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("SUCCESS") == len(files)
