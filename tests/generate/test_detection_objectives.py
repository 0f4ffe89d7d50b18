"""How fast the burn alerts fire at ordinary objectives, in the real promtool, against the formula.

Four server availability SLOs of one class read the same pool: 95 %, 99 % and 99.9 % with the
workbook's factors, and 95 % with ``page_within: 5m``. The pool serves 600 requests a minute,
healthy for 6 hours (every window full), then a constant share of them fail: all (a total outage)
or one in ten. The generated SLO groups (``m3mon generate``'s own functions, unchanged) run in
``promtool test rules``; every minute after the onset expects no alert, so promtool lists the
minutes at which each SLO's page and ticket fired. The first must be the minute
:func:`monitor.slo.burn.first_fire_minutes` states from the windows and factors — computed from
docs/slo-events.md's definition (steps of one minute, ratio above factor × budget), not from the
rules — and "never" must mean promtool saw nothing. docs/generate.md's detection table is checked
to be the same computation.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate.rules import rule_file
from monitor.generate.slo_rules import slo_groups
from monitor.model import SLO, Model, load_model
from monitor.slo import burn
from tests.generate.conftest import REPO
from tests.slo_agreement.prometheus import go_duration
from tests.support.real import require_binary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

PER_MINUTE = 600
CLEAN = 360  # healthy minutes before the onset: the 6h window is full
AFTER = 240  # minutes checked after the onset
SLOS = (("p95", 95, None), ("p99", 99, None), ("p999", 99.9, None), ("p95-fast", 95, "5m"))
LABELS = 'job="vllm",endpoint="pool",model_name="MiniMaxAI/MiniMax-M3",engine="0"'
CHECKED = {"page": cv.ALERT_BURN_PAGE, "ticket": cv.ALERT_BURN_TICKET}


def _model(tmp: Path) -> Model:
    slos = "".join(
        f"      - {{name: {n}, sli: availability, source: server, objective: {o}"
        + (f", page_within: {w}" if w else "")
        + "}\n"
        for n, o, w in SLOS
    )
    (tmp / "m.yaml").write_text(f"""version: m3mon/v1
endpoints:
  - {{name: pool, base_url: "http://127.0.0.1:9", model: MiniMaxAI/MiniMax-M3, classes: [c]}}
request_classes:
  - name: c
    max_context_tokens: 32768
    probes: [chat]
    slos:
{slos}""")
    return load_model(tmp / "m.yaml")


def _cumulative(per_minute: list[float]) -> str:
    total, out = 0.0, []
    for v in per_minute:
        total += v
        out.append(f"{total:g}")
    return " ".join(out)


def _run(model: Model, error_rate: float, tmp: Path) -> dict[tuple[str, str], list[int]]:
    """{(slo, severity): minutes after the onset at which promtool saw the alert firing}."""
    minutes = CLEAN + AFTER
    bad = [0.0] + [PER_MINUTE * error_rate if m > CLEAN else 0.0 for m in range(1, minutes + 1)]
    good = [0.0] + [PER_MINUTE - b for b in bad[1:]]
    (tmp / "rules.yml").write_text(rule_file(slo_groups(model), model.alerting, "test"))
    checks = [
        {"expr": f'count(ALERTS{{alertname="{name}",alertstate="firing",slo="{slo.name}"}})',
         "eval_time": f"{m}m", "exp_samples": []}
        for slo in model.slos
        for name in CHECKED.values()
        for m in range(CLEAN - 2, minutes + 1)
    ]  # fmt: skip
    series = [
        {
            "series": f'{cv.VLLM_REQUEST_SUCCESS}{{{LABELS},finished_reason="stop"}}',
            "values": _cumulative(good),
        },
        {
            "series": f'{cv.VLLM_REQUEST_SUCCESS}{{{LABELS},finished_reason="error"}}',
            "values": _cumulative(bad),
        },
    ]
    test = {"interval": "1m", "input_series": series, "promql_expr_test": checks}
    doc = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [test]}
    (tmp / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    proc = subprocess.run([require_binary("promtool", "/usr/bin/promtool"), "test", "rules", "test.yml"],
                          cwd=tmp, capture_output=True, text=True, timeout=200, check=False)  # fmt: skip
    out = proc.stdout + proc.stderr
    fired: dict[tuple[str, str], list[int]] = {}
    for alert, slo, when in _FIRED.findall(out):
        severity = next(s for s, a in CHECKED.items() if a == alert)
        fired.setdefault((slo, severity), []).append(round(go_duration(when) / 60) - CLEAN)
    assert proc.returncode in (0, 1), out
    return fired


_FIRED = re.compile(
    r'alertname=\\?"(\w+)\\?",alertstate=\\?"firing\\?",slo=\\?"([\w-]+)\\?"\}\)"?, time: (\w+),\n\s+exp: nil'
)


@pytest.mark.parametrize("error_rate", burn.ERROR_RATES, ids=["total-outage", "ten-percent"])
def test_first_fire_is_the_stated_minute(error_rate: float, tmp_path: Path) -> None:
    model = _model(tmp_path)
    fired = _run(model, error_rate, tmp_path)
    for slo in model.slos:
        for severity in CHECKED:
            got = sorted(fired.get((slo.name, severity), []))
            found = burn.detection(slo, severity, error_rate, history=CLEAN)
            stated = None if found is None or found[0] > AFTER else found[0]
            print(f"{slo.name} {severity} at {error_rate:.0%} bad: first fire {got[:1]} min, stated {stated}")
            if stated is None:
                assert not got, (slo.name, severity, got)
                continue
            assert got and got[0] == stated, (slo.name, severity, got[:3], stated)
            assert got == list(range(stated, AFTER + 1)), f"{slo.name} {severity}: not firing throughout"


def test_page_within_pages_a_total_outage_within_it(tmp_path: Path) -> None:
    model = _model(tmp_path)
    fast = next(s for s in model.slos if s.name == "p95-fast")
    slow = next(s for s in model.slos if s.name == "p95")
    minutes, row = burn.detection(fast, "page", 1.0) or (0, None)
    assert row is not None and minutes == 5 and burn.factor(fast, row) < burn.factor(slow, row)
    assert burn.detection(slow, "page", 1.0) == (44, row)  # 14.4 x 5 % x 60 min = 43.2 min


def test_docs_table_is_the_computed_one() -> None:
    text = (REPO / "docs" / "generate.md").read_text()
    for row in table_rows():
        assert row in text, row


#: The first fire promtool measured (``test_first_fire_is_the_stated_minute``, 6 h history): page /
#: ticket after a total outage; page / ticket at 10 % bad. The docs table's last column.
MEASURED = {
    "95 %": "44 / 19 min; none / none in 4 h",
    "95 % (`page_within: 5m`)": "5 / 19 min; 46 min / none in 4 h",
    "99 %": "9 / 4 min; 217 / 41 min",
    "99.9 %": "1 / 1 min; 9 / 4 min",
}


def table_rows() -> list[str]:
    """The rows of docs/generate.md "Burn alerts at every objective" (30-day period): the page and
    ticket, budget exhausted and exhaustion soon (``exhaustion_within: 24h``) targets, then what
    promtool measured."""
    base = load_model(REPO / "examples" / "monitor.yaml").slos[0]
    rows = []
    for objective in burn.OBJECTIVES:
        for page_within in (None, 300.0):
            if page_within is not None and objective > 99:
                continue
            slo = _with(base, objective / 100, page_within)
            cells = [burn.describe(slo, sev, e) for sev in ("page", "ticket") for e in burn.ERROR_RATES]
            cells += [burn.describe_exhausted(slo, e) for e in burn.ERROR_RATES]
            cells += [
                burn.describe_exhaustion_soon(slo, e, burn.TABLE_EXHAUSTION_WITHIN) for e in burn.ERROR_RATES
            ]
            name = f"{objective:g} %" + (" (`page_within: 5m`)" if page_within else "")
            rows.append(f"| {name} | " + " | ".join([*cells, MEASURED.get(name, "—")]) + " |")
    return rows


def _with(slo: SLO, objective: float, page_within: float | None) -> SLO:
    return dataclasses.replace(slo, objective=objective, page_within=page_within, period=30 * 86400.0)
