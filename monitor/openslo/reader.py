"""OpenSLO v1 and v1alpha SLOs read into one shape, each field remembered by its path in the file.

v1 has ``spec.indicator`` (or ``indicatorRef`` to an ``SLI``) with ``ratioMetric`` or
``thresholdMetric``, and ``spec.timeWindow``; v1alpha (what Sloth reads) has the ratio queries
under ``spec.objectives[].ratioMetrics`` and ``spec.timeWindows`` with ``unit``/``count``. Both
become an :class:`SLOInput`, so the mapping (:mod:`monitor.openslo.importer`) and its refusals
are written once, and every refusal names the field as the file spells it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from monitor.openslo.documents import API_V1ALPHA, Document, Problems
from monitor.openslo.durations import V1ALPHA_UNITS


@dataclass(frozen=True)
class Query:
    path: str  # where the query is, e.g. spec.indicator.spec.ratioMetric.bad.metricSource.spec.query
    text: str
    source_type: str  # Prometheus, Datadog, … ('' when only a metricSourceRef names it)
    source_ref: str = ""


@dataclass
class SLOInput:
    doc: Document
    service: str
    description: str
    window: dict[str, Any] | None
    window_path: str
    budgeting: str
    objectives: list[dict[str, Any]]
    objectives_path: str
    ratio: dict[str, Query] = field(default_factory=dict)  # good / bad / total
    ratio_path: str = ""
    threshold: Query | None = None
    alert_policies: list[Any] = field(default_factory=list)


def _source(
    container: Any, path: str, problems: Problems, doc: Document, alpha: bool = False
) -> Query | None:
    """The query of a v1 ``metricSource`` (v1alpha's ``source``/``query`` pair when ``alpha``)."""
    if alpha:
        q = container if isinstance(container, dict) else {}
        if not isinstance(q.get("query"), str):
            problems.add(doc, f"{path}.query", "a PromQL query is required")
            return None
        return Query(f"{path}.query", q["query"], str(q.get("source", "")))
    src = container.get("metricSource") if isinstance(container, dict) else None
    if not isinstance(src, dict):
        problems.add(doc, f"{path}.metricSource", "required")
        return None
    spec = src.get("spec") if isinstance(src.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    query = spec.get("query")
    if not isinstance(query, str):
        problems.add(doc, f"{path}.metricSource.spec.query", "a PromQL query is required")
        return None
    return Query(
        f"{path}.metricSource.spec.query",
        query,
        str(src.get("type", "")),
        str(src.get("metricSourceRef", "")),
    )


def _v1_indicator(slo: SLOInput, spec: dict[str, Any], path: str, problems: Problems) -> None:
    doc = slo.doc
    if "ratioMetric" in spec:
        ratio = spec["ratioMetric"] if isinstance(spec["ratioMetric"], dict) else {}
        slo.ratio_path = f"{path}.ratioMetric"
        for role in ("good", "bad", "total", "raw"):
            if role in ratio:
                q = _source(ratio[role], f"{path}.ratioMetric.{role}", problems, doc)
                if q is not None:
                    slo.ratio[role] = q
    elif "thresholdMetric" in spec:
        slo.threshold = _source(spec["thresholdMetric"], f"{path}.thresholdMetric", problems, doc)
    else:
        problems.add(doc, path, "expected ratioMetric or thresholdMetric")


def read_v1(doc: Document, slis: dict[str, Document], problems: Problems) -> SLOInput:
    spec = doc.spec
    windows = spec.get("timeWindow")
    slo = SLOInput(
        doc=doc,
        service=str(spec.get("service", "")),
        description=str(spec.get("description", "") or ""),
        window=windows[0] if isinstance(windows, list) and windows and isinstance(windows[0], dict) else None,
        window_path="spec.timeWindow[0]",
        budgeting=str(spec.get("budgetingMethod", "")),
        objectives=[o for o in spec.get("objectives") or [] if isinstance(o, dict)],
        objectives_path="spec.objectives",
        alert_policies=list(spec.get("alertPolicies") or []),
    )
    if isinstance(spec.get("indicator"), dict):
        inner = spec["indicator"].get("spec")
        _v1_indicator(slo, inner if isinstance(inner, dict) else {}, "spec.indicator.spec", problems)
    elif "indicatorRef" in spec:
        ref = slis.get(str(spec["indicatorRef"]))
        if ref is None:
            problems.add(doc, "spec.indicatorRef", f"no SLI document named {spec['indicatorRef']!r}")
        else:
            _v1_indicator(slo, ref.spec, f"spec.indicatorRef ({ref.where()}) spec", problems)
    else:
        problems.add(doc, "spec.indicator", "an indicator or indicatorRef is required")
    return slo


def _v1alpha_window(spec: dict[str, Any]) -> dict[str, Any] | None:
    windows = spec.get("timeWindows")
    if not (isinstance(windows, list) and windows and isinstance(windows[0], dict)):
        return None
    w = windows[0]
    unit = V1ALPHA_UNITS.get(str(w.get("unit")), "?")
    return {
        "duration": f"{w.get('count')}{unit}",
        "isRolling": w.get("isRolling"),
        "calendar": w.get("calendar"),
    }


def read_v1alpha(doc: Document, problems: Problems) -> SLOInput:
    spec = doc.spec
    objectives = [o for o in spec.get("objectives") or [] if isinstance(o, dict)]
    slo = SLOInput(
        doc=doc,
        service=str(spec.get("service", "")),
        description=str(spec.get("description", "") or ""),
        window=_v1alpha_window(spec),
        window_path="spec.timeWindows[0]",
        budgeting=str(spec.get("budgetingMethod", "")),
        objectives=objectives,
        objectives_path="spec.objectives",
    )
    ratio = objectives[0].get("ratioMetrics") if objectives else None
    if isinstance(ratio, dict):
        slo.ratio_path = "spec.objectives[0].ratioMetrics"
        for role in ("good", "bad", "total"):
            if role in ratio:
                q = _source(ratio[role], f"spec.objectives[0].ratioMetrics.{role}", problems, doc, alpha=True)
                if q is not None:
                    slo.ratio[role] = q
    elif isinstance(spec.get("indicator"), dict) and "thresholdMetric" in spec["indicator"]:
        path = "spec.indicator.thresholdMetric"
        slo.threshold = _source(spec["indicator"]["thresholdMetric"], path, problems, doc, alpha=True)
    else:
        problems.add(
            doc, "spec.objectives[0].ratioMetrics", "a ratioMetrics or indicator.thresholdMetric is required"
        )
    return slo


def read(doc: Document, slis: dict[str, Document], problems: Problems) -> SLOInput:
    return read_v1alpha(doc, problems) if doc.api_version == API_V1ALPHA else read_v1(doc, slis, problems)
