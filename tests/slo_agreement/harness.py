"""Running one scenario three ways: oracle, real Prometheus (promtool), the real store.

:func:`prepare` runs once: the real ``m3mon generate`` CLI over one configuration holding every
scenario (its request class and pools), and one migrated SQLite database that each scenario
copies. :func:`evaluate` then runs promtool in the background while the store path runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.store.migrate import upgrade
from tests.slo_agreement import oracle, prometheus, series, store
from tests.slo_agreement.config import T0, config
from tests.slo_agreement.exposition import server_pages
from tests.slo_agreement.probe_results import probe_results
from tests.slo_agreement.results import STORE_ALERTS, Outcome
from tests.slo_agreement.streams import Scenario

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Prepared:
    rule_groups: list[dict[str, Any]]  # every group of the generated alerts/*.rules.yml
    database: Path  # a folder holding a migrated m3mon.db


def m3mon() -> list[str]:
    script = Path(sys.executable).with_name("m3mon")
    return [str(script)] if script.exists() else [sys.executable, "-m", "monitor"]


def generate(scenarios: tuple[Scenario, ...], workdir: Path) -> list[Path]:
    """The rule files the real CLI writes for a configuration holding every scenario."""
    return generate_rules(config(scenarios), workdir)


def generate_rules(config_text: str, workdir: Path) -> list[Path]:
    """The rule files the real ``m3mon generate`` writes for ``config_text``."""
    cfg = workdir / "scenarios.yaml"
    cfg.write_text(config_text)
    out = workdir / "generated"
    proc = subprocess.run([*m3mon(), "generate", "-c", str(cfg), "-o", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise AssertionError(f"m3mon generate failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    files = sorted((out / "alerts").glob("*.rules.yml"))
    if not files:
        raise AssertionError(f"m3mon generate wrote no alerts/*.rules.yml under {out}")
    return files


def migrated(workdir: Path) -> Path:
    folder = workdir / "template-db"
    folder.mkdir(parents=True, exist_ok=True)
    upgrade(f"sqlite:///{folder / 'm3mon.db'}")
    for leftover in folder.glob("m3mon.db-*"):  # WAL files: the copy must be self-contained
        leftover.unlink()
    return folder


def prepare(scenarios: tuple[Scenario, ...], workdir: Path) -> Prepared:
    return Prepared(prometheus.load_groups(generate(scenarios, workdir)), migrated(workdir))


@dataclass(frozen=True)
class Evaluated:
    oracle: Outcome
    prometheus: Outcome
    store: Outcome


def store_minutes(scn: Scenario, expected: Outcome) -> set[int] | None:
    """Minutes the store evaluates: check minutes and ±2 around each change of the oracle's alerts."""
    if scn.db_outage is not None:
        return None  # every minute, with the backfill after the outage
    at = set(scn.checks)
    for m in range(1, scn.minutes + 1):
        if expected.firing[m] & set(STORE_ALERTS) != expected.firing[m - 1] & set(STORE_ALERTS):
            at.update(range(m - 2, m + 3))
    return at


def evaluate(scn: Scenario, prepared: Prepared, promtool: str, workdir: Path) -> Evaluated:
    expected = oracle.evaluate(scn)
    model = store.scenario_model(scn, workdir / "store", prepared.database)
    inputs = store.Inputs(T0, probe_results(model, scn, T0), server_pages(scn, T0))
    rules = prometheus.scenario_rules(prepared.rule_groups, scn)
    timeline = series.timeline(model, scn, inputs.results, inputs.pages, prometheus.metric_names(rules))
    proc = prometheus.start(promtool, workdir / "prometheus", scn, rules, timeline)
    try:
        run = store.Run(scn, model, workdir / "store", inputs, store_minutes(scn, expected))
        stored = store.outcome(scn, model, run.run(), T0)
    except BaseException:
        proc.kill()
        raise
    return Evaluated(expected, prometheus.finish(proc, scn), stored)


@contextmanager
def scratch(fallback: Path) -> Iterator[Path]:
    """A work folder in memory (/dev/shm: SQLite commits cost a quarter less), else ``fallback``."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield fallback
        return
    folder = Path(tempfile.mkdtemp(prefix="m3mon-agreement-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
