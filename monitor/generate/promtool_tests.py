"""promtool unit tests (``alerts/tests/*.test.yml``) for the generated rules.

Scenarios are concrete event streams whose outcome follows from the SRE Workbook arithmetic
for the SLO's own objective: an error ratio of twice the fastest page factor times the budget
(capped halfway between that threshold and 100 %) pages and tickets; 4.5 times the budget burns
above the 1-day ticket factor (3) but below every page factor (6, 14.4), so it tickets only; no
errors fire nothing. (For 99.9 %: 2.88 %, 0.45 %, 0.) They run against the first probe-sourced
availability SLO and the first server-sourced latency SLO of the configuration, plus
operational alerts.
"""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.operational_rules import operational_groups
from monitor.generate.rules import Alert
from monitor.generate.sli import server_threshold_le
from monitor.generate.slo_rules import slo_groups
from monitor.model import SLO, Model


def _expected(alert: Alert, model: Model, series_labels: dict[str, str]) -> dict[str, Any]:
    rule = alert.rule(model.alerting)
    labels = {**series_labels, **rule["labels"]}
    ann = dict(rule["annotations"])
    for name, value in series_labels.items():
        ann = {k: v.replace("{{ $labels." + name + " }}", value) for k, v in ann.items()}
    return {"exp_labels": labels, "exp_annotations": ann}


def _alert(model: Model, name: str, slo: SLO | None = None) -> Alert:
    groups = slo_groups(model) if slo else operational_groups(model)
    for g in groups:
        for a in g.alerts:
            if a.name == name and (
                slo is None
                or (
                    dict(a.labels).get(cv.L_SLO) == slo.name
                    and dict(a.labels).get(cv.L_CLASS) == slo.request_class
                )
            ):
                return a
    raise KeyError(name)


#: Events per minute in the scenarios: fine enough to express 4.5x the budget of a 99.99 % SLO.
EVENTS_PER_MINUTE = 1_000_000


def page_ratio(slo: SLO) -> float | None:
    """An error ratio that must page: above every page factor x budget (None if none can page)."""
    threshold = max(a.factor(slo.period) for a in cv.BURN_ALERTS if a.severity == "page") * slo.budget
    return None if threshold >= 1 else min(2 * threshold, (1 + threshold) / 2)


def ticket_only_ratio(slo: SLO) -> float:
    """An error ratio that tickets (1-day factor 3) but pages on no window (factors 6 and 14.4)."""
    return 4.5 * slo.budget


def _counts(ratio: float) -> tuple[int, int]:
    """(good, bad) events per minute for an error ratio."""
    bad = round(ratio * EVENTS_PER_MINUTE)
    return EVENTS_PER_MINUTE - bad, bad


def _probe_case(model: Model, slo: SLO, name: str, ratio: float, page: bool, ticket: bool) -> dict[str, Any]:
    ok, bad = _counts(ratio)
    endpoint = model.endpoints_for(slo.request_class)[0].name
    base = (
        f'{cv.PROBE_TOTAL}{{job="{model.alerting.job_monitor}",endpoint="{endpoint}",'
        f'class="{slo.request_class}",kind="chat"'
    )
    ids = {cv.L_CLASS: slo.request_class, cv.L_SLO: slo.name, cv.L_SLI: slo.sli}
    return {
        "name": name,
        "interval": "1m",
        "input_series": [
            {"series": base + ',result="success",reason=""}', "values": f"0+{ok}x80"},
            {"series": base + ',result="failure",reason="timeout"}', "values": f"0+{bad}x80"},
        ],
        "alert_rule_test": [
            {
                "eval_time": "70m",
                "alertname": name,
                "exp_alerts": [_expected(_alert(model, name, slo), model, ids)] if expected else [],
            }
            for name, expected in ((cv.ALERT_BURN_PAGE, page), (cv.ALERT_BURN_TICKET, ticket))
        ],
    }


def _server_case(model: Model, slo: SLO, name: str, ratio: float, page: bool) -> dict[str, Any]:
    fast, slow = _counts(ratio)
    metric = q.VLLM_LATENCY[slo.sli][0]
    endpoint = model.endpoints_for(slo.request_class)[0].name
    lab = f'job="{model.alerting.job_vllm}",endpoint="{endpoint}",model_name="m",engine="0"'
    ids = {cv.L_CLASS: slo.request_class, cv.L_SLO: slo.name, cv.L_SLI: slo.sli}
    return {
        "name": name,
        "interval": "1m",
        "input_series": [
            {"series": f'{metric}_bucket{{{lab},le="{server_threshold_le(slo)}"}}', "values": f"0+{fast}x80"},
            {"series": f'{metric}_bucket{{{lab},le="+Inf"}}', "values": f"0+{fast + slow}x80"},
            {"series": f"{metric}_count{{{lab}}}", "values": f"0+{fast + slow}x80"},
        ],
        "alert_rule_test": [
            {
                "eval_time": "70m",
                "alertname": cv.ALERT_BURN_PAGE,
                "exp_alerts": [_expected(_alert(model, cv.ALERT_BURN_PAGE, slo), model, ids)] if page else [],
            },
        ],
    }


def slo_tests(model: Model) -> dict[str, Any]:
    """Unit tests of the SLO rules, for the first probe availability SLO and the first server
    latency SLO the configuration has (a configuration may have neither)."""
    probe = next((s for s in model.slos if s.source == "probes" and s.sli == "availability"), None)
    server = next((s for s in model.slos if s.source == "server" and s.is_latency), None)
    tests = []
    if probe is not None:
        paging, ticket = page_ratio(probe), ticket_only_ratio(probe)
        name = "probe availability:"
        if paging is not None:
            label = f"{name} {paging:.4%} errors pages and tickets"
            tests.append(_probe_case(model, probe, label, paging, True, True))
        tests += [
            _probe_case(model, probe, f"{name} {ticket:.4%} errors tickets only", ticket, False, True),
            _probe_case(model, probe, f"{name} no errors fires nothing", 0.0, False, False),
        ]
    if server is not None:
        paging = page_ratio(server)
        if paging is not None:
            label = f"server latency: {paging:.4%} slow pages"
            tests.append(_server_case(model, server, label, paging, True))
        tests.append(_server_case(model, server, "server latency: all fast fires nothing", 0.0, False))
    return {"rule_files": ["../slo.rules.yml"], "evaluation_interval": "2m", "tests": tests}


def _op_case(
    model: Model,
    name: str,
    series: list[tuple[str, str]],
    alert: str,
    at: str,
    fire: dict[str, str] | None,
    value_text: str = "",
) -> dict[str, Any]:
    exp = []
    if fire is not None:
        e = _expected(_alert(model, alert), model, fire)
        e["exp_annotations"] = {
            k: v.replace("{{ $value | humanizePercentage }}", value_text)
            for k, v in e["exp_annotations"].items()
        }
        exp.append(e)
    return {
        "name": name,
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series],
        "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": exp}],
    }


def operational_tests(model: Model) -> dict[str, Any]:
    job, mon = model.alerting.job_vllm, model.alerting.job_monitor
    ep = model.endpoints[0].name
    up = f'up{{job="{job}",endpoint="{ep}",instance="127.0.0.1:8000"}}'
    kv = f'{cv.VLLM_KV_USAGE}{{job="{job}",endpoint="{ep}",model_name="m",engine="0"}}'
    info = f'{cv.VLLM_CACHE_CONFIG_INFO}{{job="{job}",endpoint="{ep}",engine="0",block_size="{{b}}"}}'
    scrape = f'{cv.SCRAPE_SUCCESS}{{job="{mon}",endpoint="{ep}",instance="127.0.0.1:9464"}}'
    up_labels = {"job": job, "endpoint": ep, "instance": "127.0.0.1:8000"}
    scrape_labels = {"job": mon, "endpoint": ep, "instance": "127.0.0.1:9464"}
    return {
        "rule_files": ["../operational.rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            _op_case(
                model,
                "endpoint down for 5m pages",
                [(up, "1 1 0x10")],
                cv.ALERT_ENDPOINT_DOWN,
                "8m",
                up_labels,
            ),
            _op_case(
                model,
                "endpoint down for 1m only is pending",
                [(up, "1 1 0x10")],
                cv.ALERT_ENDPOINT_DOWN,
                "3m",
                None,
            ),
            _op_case(model, "endpoint up fires nothing", [(up, "1x20")], cv.ALERT_ENDPOINT_DOWN, "15m", None),
            _op_case(
                model,
                "KV cache at 95% for 15m tickets",
                [(kv, "0.95x20")],
                cv.ALERT_KV_CACHE_NEARLY_FULL,
                "15m",
                {"endpoint": ep},
                "95%",
            ),
            _op_case(
                model,
                "KV cache at 95% for 5m is pending",
                [(kv, "0.95x20")],
                cv.ALERT_KV_CACHE_NEARLY_FULL,
                "5m",
                None,
            ),
            _op_case(
                model,
                "KV cache at 80% fires nothing",
                [(kv, "0.8x20")],
                cv.ALERT_KV_CACHE_NEARLY_FULL,
                "15m",
                None,
            ),
            _op_case(
                model,
                "block size 16 tickets",
                [(info.replace("{b}", "16"), "1x20")],
                cv.ALERT_BLOCK_SIZE_NOT_128,
                "10m",
                {"endpoint": ep, "block_size": "16"},
            ),
            _op_case(
                model,
                "block size 128 fires nothing",
                [(info.replace("{b}", "128"), "1x20")],
                cv.ALERT_BLOCK_SIZE_NOT_128,
                "10m",
                None,
            ),
            _op_case(
                model,
                "monitor scrape failing tickets",
                [(scrape, "0x20")],
                cv.ALERT_SCRAPE_FAILING,
                "10m",
                scrape_labels,
            ),
        ],
    }
