"""promtool unit tests (``alerts/tests/*.test.yml``) for the generated rules.

SLO rules: event streams at the configuration's own rates, with the alerts the store's evaluator
expects (:mod:`monitor.generate.slo_scenarios`). Operational rules: hand-written series around
each alert's condition.
"""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate import notify, slo_scenarios
from monitor.generate.operational_rules import operational_groups
from monitor.generate.rules import Alert
from monitor.generate.slo_rules import burn_parts, slo_groups
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


def slo_tests(model: Model, request_class: str, rule_file: str) -> dict[str, Any]:
    """Unit tests of the SLO rules: event streams per SLO family, expectations from the store's
    evaluator (:mod:`monitor.generate.slo_scenarios`)."""

    def expect(name: str, slo: SLO, figures: notify.Figures) -> dict[str, Any]:
        ids = {cv.L_CLASS: slo.request_class, cv.L_SLO: slo.name, cv.L_SLI: slo.sli}
        out = _expected(_alert(model, name, slo), model, ids)
        severity = {cv.ALERT_BURN_PAGE: "page", cv.ALERT_BURN_TICKET: "ticket"}.get(name)
        if severity is not None:
            for key, parts in burn_parts(model, slo, severity).items():
                out["exp_annotations"][key] = notify.render(parts, figures)
        return out

    return slo_scenarios.slo_tests(model, request_class, rule_file, expect)


def _op_case(
    model: Model,
    name: str,
    series: list[tuple[str, str]],
    alert: str,
    at: str,
    fire: dict[str, str] | None,
    value_text: str = "",
    interval: str = "1m",
) -> dict[str, Any]:
    exp = []
    if fire is not None:
        e = _expected(_alert(model, alert), model, fire)
        e["exp_annotations"] = {
            k: v.replace("{{ $value | humanizePercentage }}", value_text).replace(
                '{{ printf "%.0f" $value }}', value_text
            )
            for k, v in e["exp_annotations"].items()
        }
        exp.append(e)
    return {
        "name": name,
        "interval": interval,
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
    engine = f'{{job="{job}",endpoint="{ep}",instance="127.0.0.1:8000",model_name="m",engine="0"}}'

    def engine_series(running: str, tokens: str) -> list[tuple[str, str]]:
        """Scraped every 15 s: requests running, both token counters, KV usage flat, up."""
        return [(cv.VLLM_RUNNING + engine, running), (cv.VLLM_WAITING + engine, "0x40"),
                (cv.VLLM_GENERATION_TOKENS + engine, tokens), (cv.VLLM_PROMPT_TOKENS + engine, tokens),
                (cv.VLLM_KV_USAGE + engine, "0.3x40"), (up, "1x40")]  # fmt: skip

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
                "engine stalled with 3 requests running pages",
                engine_series("3x40", "0+100x8 800x32"),
                cv.ALERT_ENGINE_STALLED,
                "4m",
                {"endpoint": ep},
                "3",
                interval="15s",
            ),
            _op_case(
                model,
                "idle engine fires nothing",
                engine_series("0x40", "800x40"),
                cv.ALERT_ENGINE_STALLED,
                "4m",
                None,
                interval="15s",
            ),
            _op_case(
                model,
                "engine moving 2 tokens a scrape fires nothing",
                engine_series("3x40", "0+2x40"),
                cv.ALERT_ENGINE_STALLED,
                "4m",
                None,
                interval="15s",
            ),
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
