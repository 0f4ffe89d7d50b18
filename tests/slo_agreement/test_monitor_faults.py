"""The unaligned worlds with the monitor's own faults (:mod:`tests.slo_agreement.unaligned.faults`):
a crash-looping vLLM, failed scrapes of the monitor for minutes, monitor restarts inside and at the
edges of maintenance, late writes — and the same faults with a real-traffic (``source: traffic``)
SLO, whose events the monitor counts from received spans, through a crash-looping monitor replica
(:mod:`tests.slo_agreement.unaligned.traffic`) — in real Prometheus (promtool on the generated rules) and
through the real service's store path, against the oracle of
:mod:`tests.slo_agreement.unaligned.bounds`.

Hard properties, without tolerance: no alert without a bad event outside maintenance; the store
never holds more events than happened; no window ever holds more bad events than valid ones (at
every check minute, and in the rules at every evaluation). Every window count lies within the
stated tolerance of the oracle (store = rules = oracle where they are comparable).

The quick tier runs the hand-built crash loop and a few faulty seeds in Prometheus only; the slow
tier runs more seeds through both engines. ``python -m tests.slo_agreement.unaligned.sweep f1 f2
... [--rules]`` sweeps more.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.slo_agreement.harness import scratch
from tests.slo_agreement.unaligned import store
from tests.slo_agreement.unaligned.sweep import Prepared, evaluate, judge, named_world, prepare, summary
from tests.slo_agreement.unaligned.world import World

pytestmark = [pytest.mark.real, pytest.mark.timeout(600)]

#: Faulty seeds of the quick tier (rules only): 12, a server world whose pool crash-loops, with
#: monitor B down 75 s across a maintenance start (the per-counter rules read more bad events than
#: valid in a 5m window there); 6, a probe world with no bad event outside maintenance and monitor
#: A down across the maintenance end (nothing may alert).
QUICK_SEEDS = (12, 6)
#: Faulty seeds of the slow tier (both engines).
SLOW_SEEDS = (*range(1, 9), 12)
#: Real-traffic worlds (server seeds) of the quick tier: 18, requests failing only inside maintenance
#: (nothing may alert) while its pool crash-loops for ten minutes and monitor B, after 75 s down,
#: crash-loops for six.
QUICK_TRAFFIC = (18,)
#: Real-traffic worlds of the slow tier: 4, 9 and 21 with no bad event outside maintenance.
SLOW_TRAFFIC = (1, 4, 9, 13, 21)

#: Worlds by name (:func:`~tests.slo_agreement.unaligned.sweep.named_world`), built when a test needs them.
QUICK = ("crash-loop", *(f"f{s}" for s in QUICK_SEEDS), *(f"t{s}" for s in QUICK_TRAFFIC))
SLOW = ("crash-loop", *(f"f{s}" for s in SLOW_SEEDS), *(f"t{s}" for s in SLOW_TRAFFIC))
world = functools.cache(named_world)


def _selected(session: pytest.Session) -> list[World]:
    """The worlds of this module's tests the session runs (``-m`` and ``-k`` narrow generation too)."""
    names = {
        item.callspec.params["name"]
        for item in session.items
        if getattr(item, "module", None) is not None
        and item.module.__name__ == __name__
        and hasattr(item, "callspec")
    }
    return [world(n) for n in sorted(names)]


@pytest.fixture(scope="module")
def worlds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    return prepare(_selected(request.session) or [world(n) for n in QUICK], tmp_path_factory.mktemp("faults"))


@pytest.mark.parametrize("name", list(QUICK))
def test_the_rules_hold_the_properties_through_the_monitors_faults(
    name: str, promtool: str, worlds: Prepared, tmp_path: Path
) -> None:
    w = world(name)
    with scratch(tmp_path) as workdir:
        report = judge(w, evaluate(w, worlds, promtool, workdir, engines=("prometheus",)))
    print(summary(report))  # shown with -s
    assert not report.violations, f"{name}:\n" + summary(report)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SLOW))
def test_rules_and_store_hold_the_properties_through_the_monitors_faults(
    name: str, promtool: str, worlds: Prepared, tmp_path: Path
) -> None:
    w = world(name)
    with scratch(tmp_path) as workdir:
        outcomes = evaluate(w, worlds, promtool, workdir)
        report = judge(w, outcomes, store.stored_total(workdir / "store"))
    print(summary(report))  # shown with -s
    assert not report.violations, f"{name}:\n" + summary(report)
