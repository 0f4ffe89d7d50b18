"""Rule files in Sloth's documented form for a model's SLOs (the baseline of bench/rules_weight.py).

Written from Sloth's published generated output (``examples/_gen/*.yml`` of slok/sloth): per SLO
three groups, ``sloth-slo-sli-recordings-<id>`` (``slo:sli_error:ratio_rate<W>`` for W = 5m, 30m,
1h, 2h, 6h, 1d, 3d as ``errors / total`` of ``rate()`` over the raw series, and the period's as
``sum_over_time / count_over_time`` of the 5m ratio), ``sloth-slo-meta-recordings-<id>``
(objective, error budget, period days, current and period burn rate, budget remaining,
``sloth_slo_info``) and ``sloth-slo-alerts-<id>`` (the page and ticket multiwindow alerts reading
the ratio records). The SLI of each SLO is ours (``monitor.events``), written as Sloth's
``errorQuery`` / ``totalQuery``: counter SLIs as bad and valid series, histogram SLIs as
``_count − _bucket{le=T}`` over ``_count``. Sloth has no maintenance exclusion and no
minimum-events guard, and counts a server histogram over every pool (no per-endpoint bucket check).
"""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor import events
from monitor.generate import promql as q
from monitor.generate.sli import base_matchers
from monitor.model import SLO, Model
from monitor.slo import burn

WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")


def _matcher(m: events.Match) -> tuple[str, str]:
    return m.label, (q.not_regex(m.values) if m.negate else q.regex(m.values))


def sli_queries(model: Model, slo: SLO) -> tuple[str, str]:
    """(errorQuery, totalQuery) with ``<W>`` where Sloth puts the window."""
    rule, base = events.definition(slo), base_matchers(model, slo)
    if isinstance(rule, events.CounterEvents):
        valid = rule.metric + q.matchers([*base, *map(_matcher, rule.valid)])
        bad = rule.metric + q.matchers([*base, *map(_matcher, (*rule.valid, *rule.bad))])
        return f"sum(rate({bad}[<W>]))", f"sum(rate({valid}[<W>]))"
    sel = [*base, *map(_matcher, rule.select)]
    count = f"{rule.metric}_count{q.matchers(sel)}"
    good = f"{rule.metric}_bucket{q.matchers([*sel, ('le', q.eq(q.le_python_client(rule.threshold)))])}"
    total = f"sum(rate({count}[<W>]))"
    return f"({total} - sum(rate({good}[<W>])))", total


def _ids(slo: SLO) -> dict[str, str]:
    sid = f"{slo.request_class}-{slo.name}"
    return {"sloth_id": sid, "sloth_service": slo.request_class, "sloth_slo": slo.name}


def _sel(slo: SLO) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in _ids(slo).items()) + "}"


def _sli_group(model: Model, slo: SLO) -> dict[str, Any]:
    errors, total = sli_queries(model, slo)
    rules = []
    for w in WINDOWS:
        expr = f"({errors.replace('<W>', w)})\n/\n({total.replace('<W>', w)})"
        rules.append({"record": f"slo:sli_error:ratio_rate{w}", "expr": expr,
                      "labels": {**_ids(slo), "sloth_window": w}})  # fmt: skip
    five, period = f"slo:sli_error:ratio_rate5m{_sel(slo)}", slo.period_window
    expr = f"sum_over_time({five}[{period}])\n/ ignoring (sloth_window)\ncount_over_time({five}[{period}])"
    rules.append({"record": f"slo:sli_error:ratio_rate{period}", "expr": expr,
                  "labels": {**_ids(slo), "sloth_window": period}})  # fmt: skip
    return {"name": f"sloth-slo-sli-recordings-{_ids(slo)['sloth_id']}", "rules": rules}


def _meta_group(slo: SLO) -> dict[str, Any]:
    ids, sel, on = _ids(slo), _sel(slo), "on(sloth_id, sloth_slo, sloth_service) group_left"
    objective = q.num(slo.objective)
    budget = f"slo:error_budget:ratio{sel}"
    rules = [
        ("slo:objective:ratio", f"vector({objective})"),
        ("slo:error_budget:ratio", f"vector(1-{objective})"),
        ("slo:time_period:days", f"vector({round(slo.period / 86400)})"),
        ("slo:current_burn_rate:ratio", f"slo:sli_error:ratio_rate5m{sel}\n/ {on}\n{budget}"),
        ("slo:period_burn_rate:ratio", f"slo:sli_error:ratio_rate{slo.period_window}{sel}\n/ {on}\n{budget}"),
        ("slo:period_error_budget_remaining:ratio", f"1 - slo:period_burn_rate:ratio{sel}"),
    ]
    out = [{"record": name, "expr": expr, "labels": ids} for name, expr in rules]
    info = {**ids, "sloth_mode": "cli-gen-prom", "sloth_objective": f"{slo.objective * 100:g}"}
    out.append({"record": "sloth_slo_info", "expr": "vector(1)", "labels": info})
    return {"name": f"sloth-slo-meta-recordings-{ids['sloth_id']}", "rules": out}


def _alert(slo: SLO, severity: str) -> dict[str, Any]:
    parts = []
    for b in (b for b in cv.BURN_ALERTS if b.severity == severity):
        threshold = f"({q.num(burn.factor(slo, b), 12)} * {q.num(slo.budget, 12)})"
        short, long = (f"max(slo:sli_error:ratio_rate{w}{_sel(slo)} > {threshold}) without (sloth_window)"
                       for w in (b.short_window, b.long_window))  # fmt: skip
        parts.append(f"(\n    {short}\n    and\n    {long}\n)")
    summary = f"{slo.request_class} {slo.name} SLO error budget burn rate is too fast."
    return {"alert": f"SlothErrorBudgetBurn{severity.title()}", "expr": "\nor\n".join(parts),
            "labels": {"sloth_severity": severity}, "annotations": {"summary": summary}}  # fmt: skip


def sloth_groups(model: Model, interval: str) -> list[dict[str, Any]]:
    """Every SLO's three Sloth groups, evaluated every ``interval``."""
    out = []
    for slo in model.slos:
        alerts = {"name": f"sloth-slo-alerts-{_ids(slo)['sloth_id']}",
                  "rules": [_alert(slo, "page"), _alert(slo, "ticket")]}  # fmt: skip
        out += [_sli_group(model, slo), _meta_group(slo), alerts]
    return [{**g, "interval": interval} for g in out]
