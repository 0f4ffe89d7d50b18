"""One OpenSLO SLO (read by :mod:`monitor.openslo.reader`) -> one SLO of a request class, or refusals.

Budgeting must be ``Occurrences``; the window a rolling 28d/30d (``4w``); one objective; the SLI's
PromQL attributable to the class and reading only its series (:mod:`monitor.openslo.queries`);
its alert policies rows of the burn alerts (:mod:`monitor.openslo.alerts`). Every refusal names
the field.
"""

from __future__ import annotations

from typing import Any

from monitor.durations import parse_duration
from monitor.model import SLO
from monitor.openslo import documents as d
from monitor.openslo.alerts import Scheme, check_condition
from monitor.openslo.durations import format_duration, openslo_seconds
from monitor.openslo.queries import (
    Scope,
    Selector,
    attribute_counter,
    attribute_histogram,
    class_matches,
    parse,
    scope_problems,
)
from monitor.openslo.reader import Query, SLOInput

PERIODS = (28 * 86400.0, 30 * 86400.0)


class Index:
    def __init__(self, docs: list[d.Document]) -> None:
        self.by_kind: dict[str, dict[str, d.Document]] = {k: {} for k in d.KINDS}
        self.slos: list[d.Document] = []
        for doc in docs:
            if doc.kind == "SLO":
                self.slos.append(doc)
            else:
                self.by_kind[doc.kind][doc.name] = doc
        self.used: set[tuple[str, str]] = set()

    def get(self, kind: str, name: str) -> d.Document | None:
        doc = self.by_kind[kind].get(name)
        if doc is not None:
            self.used.add((kind, name))
        return doc


def _type_path(q: Query) -> str:
    if q.path.endswith(".metricSource.spec.query"):
        return q.path.removesuffix(".spec.query") + ".type"
    return q.path.removesuffix(".query") + ".source"


def _prometheus(q: Query, index: Index, doc: d.Document, problems: d.Problems) -> bool:
    kind = q.source_type
    if not kind and q.source_ref:
        ref = index.get("DataSource", q.source_ref)
        kind = str(ref.spec.get("type", "")) if ref else ""
    if kind.lower() != "prometheus":
        problems.add(
            doc, _type_path(q), f"a {kind or 'untyped'} query cannot feed an m3mon SLI (only Prometheus)"
        )
        return False
    return True


def _refuse_query(doc: d.Document, q: Query, cls: str, problems: d.Problems) -> None:
    problems.add(
        doc,
        q.path,
        f"cannot attribute {' '.join(q.text.split())!r} to an SLI of request class {cls!r}: the query must "
        "read the series m3mon's event definition of that SLI reads (as `m3mon openslo export` writes them)",
    )


def _pick(candidates: list[Any], doc: d.Document) -> Any:
    wanted = doc.annotation(d.A_SLI)
    if wanted:
        candidates = [c for c in candidates if c.sli == wanted]
    return candidates[0] if len(candidates) == 1 else None


def _scoped(
    inp: SLOInput, slo: SLO, queries: list[tuple[Query, Selector]], scope: Scope, problems: d.Problems
) -> bool:
    """Whether every query reads only the class's series; a refusal per matcher naming others."""
    ok = True
    for query, sel in queries:
        for why in scope_problems(slo, sel, scope):
            problems.add(inp.doc, query.path, why)
            ok = False
    return ok


def _threshold(
    inp: SLOInput, query: Query, cls: str, index: Index, problems: d.Problems, scope: Scope
) -> dict[str, Any] | None:
    doc, objective = inp.doc, inp.objectives[0]
    if objective.get("op") != "lte":
        problems.add(
            doc,
            f"{inp.objectives_path}[0].op",
            f"latency SLOs count events at or under the threshold (lte), got {objective.get('op')!r}",
        )
        return None
    if not isinstance(objective.get("value"), int | float) or objective["value"] <= 0:
        problems.add(
            doc,
            f"{inp.objectives_path}[0].value",
            f"expected the threshold in seconds, got {objective.get('value')!r}",
        )
        return None
    if not _prometheus(query, index, doc, problems):
        return None
    sel = parse(query.text)
    slo = _pick(attribute_histogram(cls, sel, float(objective["value"])), doc) if sel else None
    if slo is None or sel is None or not class_matches(slo, sel):
        _refuse_query(doc, query, cls, problems)
        return None
    if not _scoped(inp, slo, [(query, sel)], scope, problems):
        return None
    return {"sli": slo.sli, "threshold": format_duration(float(objective["value"])), "source": slo.source}


def _ratio(
    inp: SLOInput, cls: str, index: Index, problems: d.Problems, scope: Scope
) -> dict[str, Any] | None:
    doc = inp.doc
    if "raw" in inp.ratio:
        problems.add(
            doc,
            f"{inp.ratio_path}.raw",
            "a raw ratio query cannot be attributed to events: give bad (or good) and total",
        )
        return None
    total, other = inp.ratio.get("total"), inp.ratio.get("bad") or inp.ratio.get("good")
    if total is None or other is None:
        problems.add(doc, inp.ratio_path, "a total query and a bad (or good) query are required")
        return None
    if not (_prometheus(total, index, doc, problems) and _prometheus(other, index, doc, problems)):
        return None
    sel_total, sel_other = parse(total.text), parse(other.text)
    if sel_total is None or sel_other is None:
        _refuse_query(doc, other, cls, problems)
        return None
    is_bad = "bad" in inp.ratio
    found = attribute_counter(cls, sel_total, sel_other if is_bad else None, None if is_bad else sel_other)
    slo = _pick(found, doc)
    if slo is None or not class_matches(slo, sel_total):
        _refuse_query(doc, other, cls, problems)
        return None
    if not _scoped(inp, slo, [(total, sel_total), (other, sel_other)], scope, problems):
        return None
    return {"sli": slo.sli, "source": slo.source}


def _indicator(
    inp: SLOInput, cls: str, index: Index, problems: d.Problems, scope: Scope
) -> dict[str, Any] | None:
    if inp.threshold is not None:
        return _threshold(inp, inp.threshold, cls, index, problems, scope)
    return _ratio(inp, cls, index, problems, scope)


def _period(inp: SLOInput, problems: d.Problems) -> float | None:
    doc, w = inp.doc, inp.window
    if w is None:
        problems.add(doc, inp.window_path, "a time window is required")
        return None
    if w.get("isRolling") is not True:
        problems.add(
            doc,
            f"{inp.window_path}.isRolling",
            "calendar windows do not map: m3mon evaluates rolling 28d or 30d periods",
        )
        return None
    seconds = openslo_seconds(str(w.get("duration", "")))
    if seconds not in PERIODS:
        problems.add(
            doc,
            f"{inp.window_path}.duration",
            f"expected a rolling 28d, 4w or 30d period, got {w.get('duration')!r}",
        )
        return None
    return seconds


def _budgeting(inp: SLOInput, problems: d.Problems) -> bool:
    if inp.budgeting == "Occurrences":
        return True
    why = "m3mon budgets by occurrences (bad events / valid events); use Occurrences"
    problems.add(
        inp.doc, "spec.budgetingMethod", f"{inp.budgeting or 'no'} budgeting is not supported: {why}"
    )
    return False


def _objective(inp: SLOInput, problems: d.Problems) -> float | None:
    if len(inp.objectives) != 1:
        problems.add(
            inp.doc, inp.objectives_path, f"m3mon SLOs have one objective, found {len(inp.objectives)}"
        )
        return None
    target = inp.objectives[0].get("target")
    if not isinstance(target, int | float) or not 0 < target < 1:
        problems.add(
            inp.doc, f"{inp.objectives_path}[0].target", f"expected a ratio in (0, 1), got {target!r}"
        )
        return None
    return round(float(target) * 100, 10)


def _policies(inp: SLOInput, scheme: Scheme, index: Index, problems: d.Problems) -> None:
    doc = inp.doc
    for i, item in enumerate(inp.alert_policies):
        path = f"spec.alertPolicies[{i}]"
        name = (
            item
            if isinstance(item, str)
            else (item.get("alertPolicyRef") if isinstance(item, dict) else None)
        )
        policy = index.get("AlertPolicy", str(name)) if name else None
        spec = policy.spec if policy else (item.get("spec") if isinstance(item, dict) else None)
        if not isinstance(spec, dict):
            problems.add(doc, path, f"no AlertPolicy named {name!r}")
            continue
        for j, cond in enumerate(spec.get("conditions") or []):
            cpath = f"{path} conditions[{j}]"
            if isinstance(cond, dict) and "conditionRef" in cond:
                ref = index.get("AlertCondition", str(cond["conditionRef"]))
                if ref is None:
                    problems.add(
                        doc, f"{cpath}.conditionRef", f"no AlertCondition named {cond['conditionRef']!r}"
                    )
                    continue
                cond = {"spec": ref.spec}
            cspec = cond.get("spec") if isinstance(cond, dict) else None
            check_condition(doc, f"{cpath}.spec", cspec if isinstance(cspec, dict) else {}, scheme, problems)


def map_slo(
    inp: SLOInput, cls: str, index: Index, problems: d.Problems, scope: Scope
) -> dict[str, Any] | None:
    """One SLO of the configuration, or None (refusals added to ``problems``); ``scope``: whose
    series the class's SLIs read."""
    ok = _budgeting(inp, problems)
    period, objective = _period(inp, problems), _objective(inp, problems)
    what = _indicator(inp, cls, index, problems, scope) if inp.objectives else None
    within = _page_within(inp, problems)
    if period is not None and objective is not None:
        _policies(inp, (period, 1 - objective / 100, within), index, problems)
    if not ok or period is None or objective is None or what is None:
        return None
    out: dict[str, Any] = {"name": inp.doc.m3mon_name, "sli": what["sli"]}
    if "threshold" in what:
        out["threshold"] = what["threshold"]
    out.update(objective=objective, period=format_duration(period), source=what["source"])
    if inp.description:
        out["description"] = inp.description
    if (exhaustion := inp.doc.annotation(d.A_EXHAUSTION)) is not None:
        out["exhaustion_within"] = exhaustion
    if (min_events := inp.doc.annotation(d.A_MIN_EVENTS)) is not None:
        out["min_events"] = int(min_events) if min_events.isdigit() else min_events
    if within is not None:
        out["page_within"] = format_duration(within)
    return out


def _page_within(inp: SLOInput, problems: d.Problems) -> float | None:
    """The SLO's ``page_within`` from its annotation (it lowers the first page row's factor)."""
    text = inp.doc.annotation(d.A_PAGE_WITHIN)
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        problems.add(inp.doc, f"metadata.annotations.{d.A_PAGE_WITHIN}", str(exc))
        return None
