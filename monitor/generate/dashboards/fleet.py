"""Fleet overview and SLO dashboards: is every pool up, and how is each request class doing."""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate import windows as win
from monitor.generate.dashboards.common import RATE, dashboard, probe_sel, vllm_sel
from monitor.generate.dashboards.panels import Layout, Query, stat, timeseries
from monitor.generate.dashboards.slo_llm import add_llm_row
from monitor.model import Model

FLEET_UID = "m3mon-fleet"
SLO_UID = "m3mon-slo"
_CLS = '{class=~"$class"}'


def build_fleet(model: Model, banner: str) -> dict[str, Any]:
    v = vllm_sel(model)
    ok = probe_sel(model, ',result="success"')
    counted = probe_sel(model, f',{cv.L_REASON}!="{cv.REASON_MONITOR_ERROR}"')  # monitor faults: no event
    up = f'up{{job="{model.alerting.job_vllm}",endpoint=~"$endpoint"}}'
    lay = Layout()
    lay.row("Fleet")
    lay.add(stat("Endpoints up", [Query(f"sum({up})")]), w=6, h=4)
    lay.add(stat("Endpoints down", [Query(f"count({up} == 0) or vector(0)")]), w=6, h=4)
    lay.add(stat("Firing alerts", [Query('count(ALERTS{alertstate="firing"}) or vector(0)')]), w=6, h=4)
    lay.add(
        stat(
            "SLOs out of budget", [Query(f"count({cv.SLO_BUDGET_REMAINING_RECORD}{_CLS} <= 0) or vector(0)")]
        ),
        w=6,
        h=4,
    )
    lay.add(
        timeseries(
            "Scrape status per endpoint",
            [
                Query(up, "{{endpoint}} (prometheus)"),
                Query(
                    f'{cv.SCRAPE_SUCCESS}{{job="{model.alerting.job_monitor}",endpoint=~"$endpoint"}}',
                    "{{endpoint}} (m3mon)",
                ),
                Query(
                    f'{cv.HEALTH_UP}{{job="{model.alerting.job_monitor}",endpoint=~"$endpoint"}}',
                    "{{endpoint}} /health",
                ),
            ],
        )
    )
    lay.add(
        timeseries(
            "Requests per endpoint",
            [
                Query(f"sum by (endpoint) (rate({cv.VLLM_REQUEST_SUCCESS}{v}[{RATE}]))", "{{endpoint}}"),
            ],
            unit="reqps",
        )
    )
    lay.add(
        timeseries(
            "Running / waiting per endpoint",
            [
                Query(f"sum by (endpoint) ({cv.VLLM_RUNNING}{v})", "{{endpoint}} running"),
                Query(f"sum by (endpoint) ({cv.VLLM_WAITING}{v})", "{{endpoint}} waiting"),
            ],
        )
    )
    lay.add(
        timeseries(
            "KV cache usage per endpoint",
            [
                Query(f"max by (endpoint) ({cv.VLLM_KV_USAGE}{v})", "{{endpoint}}"),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Probe success ratio per class",
            [
                Query(
                    f"sum by (class) (rate({cv.PROBE_TOTAL}{ok}[{RATE}]))\n"
                    f"/ sum by (class) (rate({cv.PROBE_TOTAL}{counted}[{RATE}]))",
                    "{{class}}",
                ),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Error budget remaining per SLO",
            [
                Query(f"{cv.SLO_BUDGET_REMAINING_RECORD}{_CLS}", "{{class}} {{slo}}"),
            ],
            unit="percentunit",
        )
    )
    return dashboard(model, FLEET_UID, "M3 / Fleet overview", lay, banner, ("endpoint", "model", "class"))


def _burn(window: str) -> Query:
    budget = f"(1 - {cv.SLO_META_OBJECTIVE_RECORD}{_CLS})"
    return Query(
        f"{win.ratio(_CLS, window)}\n/ on (class, slo) {budget}",
        f"{{{{class}}}} {{{{slo}}}} {window}",
    )


def build_slo(model: Model, banner: str) -> dict[str, Any]:
    bad = probe_sel(model, ',result="failure"')
    lay = Layout()
    lay.row("Attainment and budget")
    lay.add(
        timeseries(
            "Attainment (rolling period, from rules)",
            [
                Query(f"1 - {cv.sli_error_ratio_record('30d')}{_CLS}", "{{class}} {{slo}} 30d"),
                Query(f"1 - {cv.sli_error_ratio_record('28d')}{_CLS}", "{{class}} {{slo}} 28d"),
                Query(f"{cv.SLO_META_OBJECTIVE_RECORD}{_CLS}", "{{class}} {{slo}} objective"),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Attainment (monitor, per window)",
            [
                Query(f"{cv.SLO_ATTAINMENT}{_CLS}", "{{class}} {{slo}} {{window}}"),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Error budget remaining",
            [
                Query(f"{cv.SLO_BUDGET_REMAINING_RECORD}{_CLS}", "{{class}} {{slo}} (rules)"),
                Query(f"{cv.SLO_BUDGET_REMAINING}{_CLS}", "{{class}} {{slo}} {{window}} (monitor)"),
            ],
            unit="percentunit",
        )
    )
    lay.add(
        timeseries(
            "Burn rate (monitor)", [Query(f"{cv.SLO_BURN_RATE}{_CLS}", "{{class}} {{slo}} {{window}}")]
        )
    )
    lay.add(
        timeseries(
            "Time to budget exhaustion at the 1h / 1d burn",
            [
                Query(f"{cv.SLO_EXHAUSTION_RECORD}{_CLS}", "{{class}} {{slo}} {{window}} (rules)"),
                Query(f"{cv.SLO_TIME_TO_EXHAUSTION}{_CLS}", "{{class}} {{slo}} {{window}} (monitor)"),
            ],
            unit="s",
        )
    )
    add_llm_row(model, lay)
    lay.row("Burn rates by window (rules)")
    for short, long in (("5m", "1h"), ("30m", "6h"), ("2h", "1d"), ("6h", "3d")):
        lay.add(timeseries(f"Burn rate {short} / {long}", [_burn(short), _burn(long)]), w=6)
    lay.row("Events")
    lay.add(
        timeseries(
            "SLO alerts firing",
            [
                Query(
                    'sum by (alertname, class, slo) (ALERTS{alertstate="firing",class=~"$class",slo!=""})',
                    "{{alertname}} {{class}} {{slo}}",
                ),
            ],
        )
    )
    lay.add(
        timeseries(
            "Probe failures by reason",
            [
                Query(
                    f"sum by (class, reason) (increase({cv.PROBE_TOTAL}{bad}[{RATE}]))",
                    "{{class}} {{reason}}",
                ),
            ],
        )
    )
    return dashboard(model, SLO_UID, "M3 / SLOs per request class", lay, banner, ("endpoint", "class"))
