"""Detection-time targets of the alerts outside ``monitor.generate.detection``: SLO and fleet alerts.

``SLOErrorBudgetExhaustionSoon`` is replayed here: the shipped ``alerts/slo-interactive-32k.rules.yml``
(the example's 99.9 % / 30-day probe availability SLO with ``exhaustion_within: 24h``) under the
real ``promtool test rules``, fed 1000 probe results a minute, a clean hour, then a steady error
ratio. Its first firing minute is computed by hand (below) and checked at every minute.

The other SLO alerts are checked by the agreement suite (``tests/slo_agreement``, scenarios with a
``Detection``), the fleet alerts by ``tests/fleet/test_fleet_rules.py``, the operational ones by
``tests/generate/test_detection_{operational,store,self}.py``. :data:`WHERE_TESTED` names the test
of every alert outside ``monitor.generate.detection``; the completeness test requires that every
alert the example configuration ships (``alerts/**/*.rules.yml``) has a row with a target in
docs/generate.md "Detection-time targets" and a named test that exists.

Hand computation (P = 30 d, budget b = 0.001, L = 24 h). With every window holding the whole
scenario (1d, 30d), the period ratio is x = bad / valid, the budget left R = 1 − x/b and the 1d
projection R·P·b / x; it is below L exactly when x > P·b / (P + L) = 0.03/31 = 0.000967742 (and
once x ≥ b the budget is spent: projection 0). The 1h projection is shorter (its ratio is higher)
and the guard (334 valid events in 1d) is met from the first minute. After C = 60 clean minutes
at k bad of 1000 a minute, x(d) = k·d / (1000·(60 + d)) at d minutes after the onset:

* k = 2 (2× the budget): x > x* ⇔ d > 58.0645 / 1.032258 = 56.25 → first fire at d = 57
  (x(56) = 0.00096552: 1d projection 25.7 h; x(57) = 0.00097436: 18.9 h, 1h projection 9.7 h);
* k = 10 (10×): d > 0.5806 / 0.0090323 = 6.43 → first fire at d = 7 (x(7) = 0.0010448 ≥ b:
  the budget is spent, the projection is 0).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate import detection
from tests.generate.conftest import REPO
from tests.slo_agreement.prometheus import go_duration
from tests.slo_agreement.scenarios import BY_NAME
from tests.support.real import require_binary

PER_MINUTE = 1000
CLEAN = 60  # minutes before the onset
RULES = REPO / "alerts" / "slo-interactive-32k.rules.yml"
SERIES = 'm3mon_probe_total{job="m3mon",endpoint="m3-interactive",class="interactive-32k",kind="chat",%s}'
FIRING = (
    f'count(ALERTS{{alertname="{cv.ALERT_EXHAUSTION_SOON}",alertstate="firing",class="interactive-32k"}})'
)


@dataclass(frozen=True)
class Burn:
    """``bad`` of every 1000 probes fail from minute CLEAN on; the alert first fires ``first``
    minutes after the onset (by hand), and must by ``within`` (the stated target)."""

    bad: int
    first: int
    within: int


BURNS = (Burn(2, 57, 60), Burn(10, 7, 10))


def _values(per_minute: list[int]) -> str:
    return " ".join(str(sum(per_minute[: m + 1])) for m in range(len(per_minute)))


def _test(burn: Burn) -> dict[str, Any]:
    """Every minute from before the onset to past the target expects no alert: promtool then
    lists the minutes at which it fired."""
    minutes = CLEAN + burn.within + 2
    bad = [0] + [burn.bad if m > CLEAN else 0 for m in range(1, minutes + 1)]
    good = [0] + [PER_MINUTE - b for b in bad[1:]]
    checks = [
        {"expr": FIRING, "eval_time": f"{m}m", "exp_samples": []} for m in range(CLEAN - 5, minutes + 1)
    ]
    return {
        "interval": "1m",
        "input_series": [
            {"series": SERIES % 'result="success",reason="none"', "values": _values(good)},
            {"series": SERIES % 'result="failure",reason="connect_error"', "values": _values(bad)},
        ],
        "promql_expr_test": checks,
    }


def _rules(to: Path) -> None:
    """The shipped file's groups of the SLO (its records, burn alerts) and of its exhaustion alert."""
    wanted = {f"m3mon-{kind}-interactive-32k-availability" for kind in ("slo", "exhaustion")}
    groups = [
        g for g in yaml.load(RULES.read_text(), Loader=yaml.CSafeLoader)["groups"] if g["name"] in wanted
    ]
    assert {g["name"] for g in groups} == wanted
    to.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))


def fired_minutes(output: str) -> list[int]:
    """Minutes at which promtool got a firing alert where the test expected none."""
    return sorted(
        round(go_duration(t) / 60) for t in re.findall(r"time: ([0-9a-z]+),\n\s+exp: nil\n\s+got: \{", output)
    )


@pytest.mark.parametrize("burn", BURNS, ids=[f"{b.bad}-per-mille" for b in BURNS])
def test_exhaustion_soon_first_fires_at_the_hand_computed_minute(burn: Burn, tmp_path: Path) -> None:
    """The first fire is the hand-computed minute, or one step later: the exhaustion records sit in
    their own rule group and may read the SLO group's records of the step before."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    assert "exhaustion_within: 24h" in (REPO / "examples" / "monitor.yaml").read_text()
    _rules(tmp_path / "rules.yml")
    doc = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [_test(burn)]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode in (0, 1) and "FAILED" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    fired = fired_minutes(proc.stdout + proc.stderr)
    assert fired, "SLOErrorBudgetExhaustionSoon never fired"
    first = fired[0] - CLEAN
    print(
        f"{burn.bad} per mille: first fire {first} min after the onset (by hand {burn.first}, target {burn.within})"
    )
    assert burn.first <= first <= burn.first + 1, (
        f"first fire {first} min after the onset, by hand {burn.first}"
    )
    assert first <= burn.within
    assert fired == list(range(fired[0], CLEAN + burn.within + 3)), f"not firing throughout: {fired}"


#: Where the detection time of every alert outside ``monitor.generate.detection`` is tested.
WHERE_TESTED = {
    cv.ALERT_BURN_PAGE: "tests/slo_agreement/test_agreement.py::test_prometheus_store_and_oracle_agree",
    cv.ALERT_BURN_TICKET: "tests/slo_agreement/test_agreement.py::test_prometheus_store_and_oracle_agree",
    cv.ALERT_BUDGET_EXHAUSTED: "tests/slo_agreement/test_agreement.py::test_prometheus_store_and_oracle_agree",
    cv.ALERT_METRIC_ABSENT: "tests/slo_agreement/test_agreement.py::test_prometheus_store_and_oracle_agree",
    cv.ALERT_THRESHOLD_NOT_EDGE: "tests/slo_agreement/test_agreement.py::test_prometheus_store_and_oracle_agree",
    cv.ALERT_EXHAUSTION_SOON: "tests/generate/test_detection_slo.py::"
    "test_exhaustion_soon_first_fires_at_the_hand_computed_minute",
    cv.ALERT_ENDPOINT_UNMONITORED: "tests/fleet/test_fleet_rules.py::test_fleet_rules_pass_hand_computed_promtool_tests",
    cv.ALERT_NO_EVALUATOR: "tests/fleet/test_fleet_rules.py::test_fleet_rules_pass_hand_computed_promtool_tests",
    cv.ALERT_REPLICA_DOWN: "tests/fleet/test_fleet_pairs.py::test_one_dead_replica_tickets_a_dead_shard_pages",
    cv.ALERT_MAINTENANCE: "tests/generate/test_maintenance_live.py::"
    "test_the_maintenance_alert_holds_from_just_after_start_to_end_inclusive",
}
#: Agreement scenarios whose ``Detection`` is a row of the docs table (alert, scenario, target).
SLO_ROWS = ("detect-100pct", "detect-50pct", "detect-10pct", "detect-1pct", "detect-half-pct",
            "probes-stop-absent", "server-absent", "custom-buckets-no-edge")  # fmt: skip


def shipped_alerts() -> set[str]:
    """Every alert name in the rule files generated for the example (alerts/, alerts/fleet/)."""
    names: set[str] = set()
    for path in (REPO / "alerts").rglob("*.rules.yml"):
        for group in yaml.load(path.read_text(), Loader=yaml.CSafeLoader)["groups"]:
            names |= {r["alert"] for r in group["rules"] if "alert" in r}
    return names


def target_rows() -> dict[str, list[str]]:
    """alert -> the target cells of its rows in docs/generate.md "Detection-time targets"."""
    text = (REPO / "docs" / "generate.md").read_text()
    section = text[text.index("### Detection-time targets") :]
    section = section[: section.index("One-off events that never fire")]
    rows: dict[str, list[str]] = {}
    for alert, target in re.findall(r"^\| `(\w+)` \| [^|]+ \| ([^|]+) \|", section, flags=re.M):
        rows.setdefault(alert, []).append(target.strip())
    return rows


def test_every_shipped_alert_has_a_stated_target_and_a_test() -> None:
    rows = target_rows()
    shipped = shipped_alerts()
    assert {cv.ALERT_EXHAUSTION_SOON, cv.ALERT_ENDPOINT_UNMONITORED, cv.ALERT_NO_EVALUATOR} <= shipped
    missing = sorted(
        a for a in shipped if not any(re.match(r"\d+(\.\d+)? (min|h)\b", t) for t in rows.get(a, []))
    )
    assert not missing, f"alerts without a detection-time target in docs/generate.md: {missing}"
    operational = {t.alert for t in detection.TARGETS}
    untested = sorted(a for a in shipped if a not in operational and a not in WHERE_TESTED)
    assert not untested, f"alerts whose detection time no test checks: {untested}"
    for where in WHERE_TESTED.values():
        path, _, func = where.partition("::")
        assert (REPO / path).is_file() and (not func or f"def {func}(" in (REPO / path).read_text()), where


def test_docs_rows_are_the_tested_targets() -> None:
    section = (REPO / "docs" / "generate.md").read_text()
    for name in SLO_ROWS:
        d = BY_NAME[name].detection
        assert d is not None, name
        assert re.search(rf"^\| `{d.alert}` \| [^|]*`{name}`[^|]* \| {d.within:g} min \|", section, re.M), (
            name
        )
    for burn in BURNS:
        row = f"| `{cv.ALERT_EXHAUSTION_SOON}` | {burn.bad / 10:g} % of probes fail"
        assert f"{row}" in section and f"| {burn.within} min | {burn.first} min |" in section, burn


def test_shipped_slo_tests_check_absent_and_bucket_edge_timing(tmp_path: Path) -> None:
    """The absent-metric and bucket-edge cases of the generated alerts/tests/slo-interactive-32k.test.yml
    (:mod:`monitor.generate.slo_scenarios`; that they pass on the shipped rules is
    test_real_tools.test_promtool_unit_tests_pass) fail when the two alerts wait one minute longer
    than docs/slo-events.md §3 says. Only those cases and their SLOs' rule groups are run."""
    promtool = require_binary("promtool", "/usr/bin/promtool")
    doc = yaml.load(
        (REPO / "alerts" / "tests" / "slo-interactive-32k.test.yml").read_text(), Loader=yaml.CSafeLoader
    )
    doc["tests"] = [t for t in doc["tests"] if "source stops" in t["name"] or "no bucket edge" in t["name"]]
    assert len(doc["tests"]) == 3
    wanted = {f"m3mon-slo-interactive-32k-{slo}" for slo in ("availability", "ttft-p95")}
    groups = [
        g for g in yaml.load(RULES.read_text(), Loader=yaml.CSafeLoader)["groups"] if g["name"] in wanted
    ]
    doc["rule_files"] = ["rules.yml"]
    (tmp_path / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    text = yaml.safe_dump({"groups": groups}, sort_keys=False)
    late = text.replace("for: 10m\n", "for: 11m\n").replace("for: 5m\n", "for: 6m\n")
    assert late != text
    (tmp_path / "rules.yml").write_text(late)
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    for alert in (cv.ALERT_METRIC_ABSENT, cv.ALERT_THRESHOLD_NOT_EDGE):
        assert f'alertname=\\"{alert}\\"' in out, alert
