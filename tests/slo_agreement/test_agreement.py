"""The agreement suite: every scenario evaluated by real Prometheus, the store and the oracle.

Each scenario (``tests/slo_agreement/scenarios*.py``) is an event stream. It is evaluated
(1) by the rules the real ``m3mon generate`` writes, in real Prometheus (``promtool test rules``
of Prometheus 2.42, fed by the real probe exporter and by vLLM pages), (2) by the real store and
evaluator (``m3mon run``'s write path through the buffered writer into SQLite, and
``evaluate_due``), and (3) by an oracle written from docs/slo-events.md alone. Scrapes and
evaluations fall on the same whole minutes, so all three count the same events.

Tolerance: error ratio and attainment within 1e-9 absolute, burn rate and budget remaining
within 1e-9 × max(1, |value|); "no data" must be no data (no sample / NULL) everywhere, never
NaN. Numbers are compared at every check minute (every 5 minutes, 15 for scenarios over 4 h).
Alerts: the firing state of every SLO alert must match at every minute, or match the other
side's state one evaluation step before or after (first firing within ±1 minute). Prometheus is
read at every minute, on all five SLO alerts; the store at the check minutes and at every minute
within 2 of a change of the oracle's alerts, on the burn-rate and budget-exhausted alerts (it
has no absent-metric or bucket-edge notion), and its stored status must be the one the numbers
imply (docs/store-and-slo.md). Detection scenarios also check every source's first firing
against docs/slo-events.md §3; scenarios with numbers computed by hand (maintenance windows)
check them exactly in every source.

``python -m tests.slo_agreement.table`` prints the numbers of every scenario as tables.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.slo_agreement.compare import disagreements
from tests.slo_agreement.harness import Prepared, evaluate, scratch
from tests.slo_agreement.scenarios import SCENARIOS
from tests.slo_agreement.streams import Scenario

pytestmark = pytest.mark.real


#: Scenarios longer than this many minutes (hours of promtool time; 10-30 s each) or with a database
#: outage replayed are the slow tier (``make test-slow``); the rest cover every SLI, source and
#: finding in ``make test``.
SOAK_MINUTES = 200


def _tier(scn: Scenario) -> object:
    soak = scn.minutes > SOAK_MINUTES or scn.db_outage is not None
    return pytest.param(scn, id=scn.name, marks=[pytest.mark.slow] if soak else [])


@pytest.mark.parametrize("scn", [_tier(s) for s in SCENARIOS])
def test_prometheus_store_and_oracle_agree(
    scn: Scenario, promtool: str, prepared: Prepared, tmp_path: Path
) -> None:
    with scratch(tmp_path) as workdir:
        result = evaluate(scn, prepared, promtool, workdir)
    problems = disagreements(scn, result.oracle, [result.prometheus, result.store])
    assert not problems, f"{scn.name}: {scn.about}\n" + "\n".join(problems)
