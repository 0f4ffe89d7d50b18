"""Every finding of issue #11 is a scenario that fails under the old form (and passes now).

``test_agreement`` shows that the real rules and the real store agree with the oracle on every
scenario. Here each finding's old form (:mod:`tests.slo_agreement.old_forms`) is put back by a
narrow patch, and the finding's own scenario, evaluated by the evaluator the finding was about,
must then disagree with the oracle in the way the finding describes. A patch that changes the
generated rules regenerates the scenario SLO's rule group in-process; that the unpatched
in-process group equals the one the real ``m3mon generate`` CLI wrote is checked first, so the
patch is the only difference. Only one evaluator runs per finding, to keep the suite cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monitor.generate import slo_rules
from monitor.model import Model
from tests.slo_agreement import oracle, prometheus, series, store
from tests.slo_agreement.compare import alerts, numbers
from tests.slo_agreement.config import T0
from tests.slo_agreement.exposition import server_pages
from tests.slo_agreement.harness import Prepared, scratch, store_minutes
from tests.slo_agreement.old_forms import OLD_FORMS, OldForm
from tests.slo_agreement.probe_results import probe_results
from tests.slo_agreement.results import Outcome
from tests.slo_agreement.scenarios import BY_NAME
from tests.slo_agreement.streams import Scenario

pytestmark = pytest.mark.real


def _slo_groups(model: Model) -> dict[str, dict[str, Any]]:
    return {g.name: g.render(model.alerting) for g in slo_rules.slo_groups(model)}


def _with_groups(rules: dict[str, Any], groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"groups": [groups.get(g["name"], g) for g in rules["groups"]]}


def _on_prometheus(
    scn: Scenario, model: Model, rules: dict[str, Any], promtool: str, workdir: Path
) -> Outcome:
    results, pages = probe_results(model, scn, T0), server_pages(scn, T0)
    timeline = series.timeline(model, scn, results, pages, prometheus.metric_names(rules))
    return prometheus.finish(prometheus.start(promtool, workdir / "prometheus", scn, rules, timeline), scn)


def _on_store(scn: Scenario, model: Model, expected: Outcome, workdir: Path) -> Outcome:
    inputs = store.Inputs(T0, probe_results(model, scn, T0), server_pages(scn, T0))
    run = store.Run(scn, model, workdir / "store", inputs, store_minutes(scn, expected))
    return store.outcome(scn, model, run.run(), T0)


def evaluate_old_form(form: OldForm, scn: Scenario, prepared: Prepared, promtool: str, workdir: Path,
                      mp: pytest.MonkeyPatch) -> tuple[Outcome, Outcome]:  # fmt: skip
    """(oracle, the finding's evaluator under the old form) for the finding's scenario."""
    expected = oracle.evaluate(scn)
    model = store.scenario_model(scn, workdir / "store", prepared.database)
    rules = prometheus.scenario_rules(prepared.rule_groups, scn)
    if form.regenerate:
        now = _slo_groups(model)
        assert _with_groups(rules, now) == rules, "in-process SLO groups differ from the CLI's"
    form.patch(mp)
    if form.source == "store":
        return expected, _on_store(scn, model, expected, workdir)
    if form.regenerate:
        rules = _with_groups(rules, _slo_groups(model))
    return expected, _on_prometheus(scn, model, rules, promtool, workdir)


CASES = [(f, BY_NAME[f.scenario]) for f in OLD_FORMS]


@pytest.mark.parametrize(
    ("form", "scn"), CASES, ids=[f"finding-{f.finding}-{f.patch.__name__}" for f in OLD_FORMS]
)
def test_the_old_form_disagrees_with_the_oracle(
    form: OldForm, scn: Scenario, promtool: str, prepared: Prepared, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    with scratch(tmp_path) as workdir:
        expected, old = evaluate_old_form(form, scn, prepared, promtool, workdir, monkeypatch)
    problems = numbers(expected, old) + alerts(expected, old)
    shown = {want: next((line for line in problems if want in line), None) for want in form.shows}
    print(f"finding {form.finding} ({scn.name}, {form.source}):", *shown.values(), sep="\n  ")
    missing = [want for want, line in shown.items() if line is None]
    assert not missing, (
        f"finding {form.finding}: the old form should disagree with the oracle on {missing} in "
        f"{scn.name}; its disagreements:\n" + "\n".join(problems[:40] or ["(none)"])
    )
