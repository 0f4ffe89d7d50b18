"""The agreement suite, unaligned (issue 22): worlds whose clocks do not line up, in real Prometheus
(promtool on the generated rules) and through the real service's store path, against the oracle.

Each world (:mod:`tests.slo_agreement.unaligned.world`) has per-target scrape phases, an
evaluation offset, jitter, skipped evaluations, failed scrapes on one replica of the pair, late
writes, restarts, and maintenance windows in short and long windows, on the class or on one pool
of two. The hand-built worlds of :mod:`tests.slo_agreement.unaligned.named` reproduce findings 2–4.
Every window count of every check minute must lie within the stated tolerance
(:mod:`tests.slo_agreement.unaligned.bounds`), and three properties hold without tolerance: with no
bad event outside maintenance nothing alerts, the store never holds more events than happened, and
no window holds more bad events than valid ones (the rules: at every evaluation).

The seeds are fixed (the same worlds every run); ``M3MON_SWEEP_SEEDS=1-200`` runs more, and
``python -m tests.slo_agreement.unaligned.sweep SEEDS...`` prints the sweep's largest
disagreement per measure against its tolerance.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.slo_agreement.harness import scratch
from tests.slo_agreement.unaligned import store
from tests.slo_agreement.unaligned.named import NAMED
from tests.slo_agreement.unaligned.sweep import CI_SEEDS, Prepared, evaluate, judge, prepare, summary
from tests.slo_agreement.unaligned.world import World, world

pytestmark = [pytest.mark.real, pytest.mark.timeout(600)]


def _seeds() -> tuple[int, ...]:
    wanted = os.environ.get("M3MON_SWEEP_SEEDS")
    if not wanted:
        return CI_SEEDS
    lo, _, hi = wanted.partition("-")
    return tuple(range(int(lo), int(hi or lo) + 1))


WORLDS: dict[str, World] = {**NAMED, **{f"seed-{s}": world(s) for s in _seeds()}}


@pytest.fixture(scope="module")
def unaligned(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    return prepare(list(WORLDS.values()), tmp_path_factory.mktemp("unaligned"))


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n.startswith("seed-") else n for n in WORLDS]
)
def test_an_unaligned_world_stays_within_the_stated_tolerance(
    name: str, promtool: str, unaligned: Prepared, tmp_path: Path
) -> None:
    w = WORLDS[name]
    with scratch(tmp_path) as workdir:
        outcomes = evaluate(w, unaligned, promtool, workdir)
        report = judge(w, outcomes, store.stored_total(workdir / "store"))
    print(summary(report))  # shown with -s
    assert not report.violations, f"{name}:\n" + summary(report)
