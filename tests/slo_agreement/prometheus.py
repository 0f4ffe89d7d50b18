"""Evaluating a scenario in real Prometheus: the generated rules under ``promtool test rules``.

The rules are the output of the real ``m3mon generate`` CLI; the scenario's own rules (those
labelled with its class or selecting its class or pools) are kept. Values are read back through
``promql_expr_test`` entries whose ``exp_samples`` are deliberately empty: promtool then prints
what it got for each, in full precision (``got: {labels} 1.2345678901234567E-02, ...``). At every
check minute the error ratio of every window (its record, or summed on demand from the step
records where no record is kept: :mod:`monitor.generate.windows`) and the budget remaining are read; at every minute,
``ALERTS{alertstate="firing"}``. Evaluation and series interval: 1 minute, starting at 0.
"""

from __future__ import annotations

import json
import re
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from monitor.generate import windows as win
from tests.slo_agreement.config import slo_name
from tests.slo_agreement.oracle import WINDOWS, period_name
from tests.slo_agreement.results import Outcome, Reading, reading_from_ratios
from tests.slo_agreement.series import Timeline, input_series
from tests.slo_agreement.streams import Scenario

REMAINING_RECORD = "m3mon:slo_error_budget_remaining:ratio"
_NAME_CHARS = "A-Za-z0-9_:.-"


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![{_NAME_CHARS}]){re.escape(word)}(?![{_NAME_CHARS}])", text) is not None


def load_groups(rule_files: list[Path]) -> list[dict[str, Any]]:
    """Every rule group of the generated files, in order."""
    return [g for path in rule_files for g in yaml.load(path.read_text(), Loader=yaml.CSafeLoader)["groups"]]


def scenario_rules(groups: list[dict[str, Any]], scn: Scenario) -> dict[str, Any]:
    """The scenario's rules (labelled with its class, or selecting its class or pools), in order."""
    names = [scn.name, *(scn.endpoint(p.name) for p in scn.pools)]
    kept = []
    for group in groups:
        rules = [r for r in group["rules"] if _mine(r, scn.name, names)]
        if rules:
            kept.append({**group, "rules": rules})
    return {"groups": kept}


def _mine(rule: dict[str, Any], klass: str, names: list[str]) -> bool:
    if rule.get("labels", {}).get("class") == klass:
        return True
    return any(_mentions(str(rule["expr"]), n) for n in names)


def metric_names(rules: dict[str, Any]) -> set[str]:
    """Metric names the rules' expressions mention (the input series worth loading)."""
    text = "\n".join(str(r["expr"]) for g in rules["groups"] for r in g["rules"])
    return set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text))


def _ids(scn: Scenario) -> str:
    return f'class="{scn.name}",slo="{slo_name(scn)}"'


def _windows(scn: Scenario) -> list[str]:
    return [w for w, _ in WINDOWS] + [period_name(scn)]


def ratio_query(scn: Scenario) -> str:
    """Every window's error ratio (its record, or summed on demand as the dashboards do) and the
    budget remaining, each labelled ``window`` (``remaining`` for the budget)."""
    sel = "{" + _ids(scn) + "}"
    parts = [f'label_replace({win.ratio(sel, w)}, "window", "{w}", "", "")' for w in _windows(scn)]
    parts.append(f'label_replace({REMAINING_RECORD}{sel}, "window", "remaining", "", "")')
    return " ".join(" or ".join(parts).split())


def alerts_query(scn: Scenario) -> str:
    return f'ALERTS{{alertstate="firing",{_ids(scn)}}}'


def test_file(scn: Scenario, rules_file: str, tl: Timeline) -> dict[str, Any]:
    queries = [(ratio_query(scn), m) for m in scn.checks]
    queries += [(alerts_query(scn), m) for m in range(scn.minutes + 1)]
    return {
        "rule_files": [rules_file],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": input_series(tl),
            "promql_expr_test": [{"expr": q, "eval_time": f"{m}m", "exp_samples": []} for q, m in queries],
        }],
    }  # fmt: skip


def start(
    promtool: str, workdir: Path, scn: Scenario, rules: dict[str, Any], tl: Timeline
) -> subprocess.Popen[str]:
    """Write the rules and the unit test, and start promtool on them (read with :func:`finish`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False))
    doc = test_file(scn, "rules.yml", tl)
    (workdir / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    return subprocess.Popen([promtool, "test", "rules", "test.yml"], cwd=workdir, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip


_FAILURE = re.compile(r'expr: ("(?:[^"\\]|\\.)*"), time: ([0-9a-z]+),(?: err: (.*))?')
_GOT = re.compile(r"^\s+got: (.*)$")
_SAMPLE = re.compile(r"\{([^}]*)\} ([^,\s]+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNITS = {"y": 365 * 86400, "w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 0.001}


def go_duration(text: str) -> float:
    """Seconds of a Prometheus ``model.Duration`` string such as ``1h30m`` or ``0s``."""
    return sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d+)(ms|[ywdhms])", text))


Got = dict[tuple[str, int], list[tuple[dict[str, str], float]]]


def parse_output(output: str) -> Got:
    """What promtool got for each (expr, minute) it printed; absent keys got nothing."""
    got: Got = {}
    key: tuple[str, int] | None = None
    for line in output.splitlines():
        failure = _FAILURE.search(line)
        if failure:
            if failure.group(3):
                raise AssertionError(f"promtool query error: {line.strip()}")
            key = (json.loads(failure.group(1)), round(go_duration(failure.group(2)) / 60))
            continue
        sample = _GOT.match(line)
        if sample and key is not None and sample.group(1) != "nil":
            got[key] = [(dict(_LABEL.findall(lab)), float(v)) for lab, v in _SAMPLE.findall(sample.group(1))]
            key = None
    return got


def finish(proc: subprocess.Popen[str], scn: Scenario, timeout: float = 240) -> Outcome:
    output, _ = proc.communicate(timeout=timeout)
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and "FAILED:" not in output):
        raise AssertionError(f"promtool could not run the scenario's test:\n{output[-3000:]}")
    return outcome(scn, parse_output(output))


def outcome(scn: Scenario, got: Got) -> Outcome:
    budget = float(1 - Fraction(scn.slo.objective) / 100)
    out = Outcome("prometheus")
    for m in scn.checks:
        out.readings[m] = _reading(scn, got.get((ratio_query(scn), m), []), budget)
    for m in range(scn.minutes + 1):
        out.firing[m] = frozenset(lab["alertname"] for lab, _ in got.get((alerts_query(scn), m), []))
    return out


def _reading(scn: Scenario, samples: list[tuple[dict[str, str], float]], budget: float) -> Reading:
    values = {lab["window"]: v for lab, v in samples}
    ratios = {w: values.get(w) for w in _windows(scn)}
    return reading_from_ratios(ratios, budget, values.get("remaining"))
