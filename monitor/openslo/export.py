"""``m3mon openslo export``: the configuration's classes, SLOs and endpoints as OpenSLO v1 documents.

* every request class is a ``Service`` (settings OpenSLO has no field for in ``m3mon.dev/…``
  annotations), every endpoint a ``DataSource`` of type ``vLLM``/``SGLang``;
* every SLO an ``SLO`` with an inline SLI (:mod:`monitor.openslo.queries`), ``Occurrences``
  budgeting over its rolling period, and references to the burn-alert policies of its period;
* the burn alerts ``AlertPolicy`` documents with inline ``AlertCondition``s, and their receivers
  ``AlertNotificationTarget``s (:mod:`monitor.openslo.alerts`).

OpenSLO names may not hold ``_``; such names are written with ``-`` and the exact name kept in
the ``m3mon.dev/name`` annotation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from monitor import events
from monitor.errors import GenerateError
from monitor.model import SLO, Endpoint, Model, RequestClass
from monitor.openslo import alerts, queries
from monitor.openslo import documents as d
from monitor.openslo.durations import format_duration


def openslo_name(name: str) -> str:
    return name.replace("_", "-")


def _metadata(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    notes = dict(annotations or {})
    if openslo_name(name) != name:
        notes[d.A_NAME] = name
    meta: dict[str, Any] = {"name": openslo_name(name), "displayName": name}
    if notes:
        meta["annotations"] = notes
    return meta


def _doc(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": d.API_V1, "kind": kind, "metadata": metadata, "spec": spec}


def service(rc: RequestClass) -> dict[str, Any]:
    p = rc.probe
    notes = {
        d.A_MAX_CONTEXT: str(rc.max_context_tokens),
        d.A_PROBES: ",".join(p.kinds),
        d.A_DEDICATED: str(rc.dedicated_pool).lower(),
        d.A_PROBE + "interval": format_duration(p.interval),
        d.A_PROBE + "timeout": format_duration(p.timeout),
        d.A_PROBE + "jitter": format_duration(p.jitter),
        d.A_PROBE + "long_prompt_tokens": str(p.long_prompt_tokens),
        d.A_PROBE + "tool_delay": format_duration(p.tool_delay),
        d.A_PROBE + "agent_rounds": str(p.agent_rounds),
    }
    notes[d.A_FREEZE_BELOW] = repr(round(rc.budget_policy.freeze_below * 100, 10))
    notes[d.A_FREEZE_PAGE] = str(rc.budget_policy.freeze_on_page_burn).lower()
    spec = {"description": rc.description} if rc.description else {}
    return _doc("Service", _metadata(rc.name, notes), spec)


def data_source(ep: Endpoint) -> dict[str, Any]:
    details: dict[str, Any] = {
        "base_url": ep.base_url,
        "model": ep.model,
        "classes": list(ep.classes),
        "scrape_interval": format_duration(ep.scrape_interval),
        "metrics_path": ep.metrics_path,
    }
    if ep.api_key_env:
        details["api_key_env"] = ep.api_key_env
    deployment = {k: v for k, v in vars(ep.deployment).items() if v is not None}
    if deployment:
        details["deployment"] = deployment
    kind = "vLLM" if ep.backend == "vllm" else "SGLang"
    return _doc("DataSource", _metadata(ep.name), {"type": kind, "connectionDetails": details})


def _source(query: str) -> dict[str, Any]:
    return {"metricSource": {"type": "Prometheus", "spec": {"query": query}}}


def indicator(model: Model, slo: SLO) -> dict[str, Any]:
    rule = events.definition(slo)
    if isinstance(rule, events.CounterEvents):
        total, bad = queries.counter_queries(model, rule, slo)
        spec: dict[str, Any] = {
            "ratioMetric": {"counter": True, "bad": _source(bad), "total": _source(total)}
        }
    elif isinstance(rule, events.HistogramEvents):
        spec = {"thresholdMetric": _source(queries.histogram_query(model, rule, slo))}
    else:  # pragma: no cover - a new kind of event definition needs its own mapping
        raise GenerateError(f"{slo.id}: SLI {slo.sli} has no OpenSLO mapping")
    return {"metadata": {"name": openslo_name(f"{slo.request_class}-{slo.name}-sli")}, "spec": spec}


def slo_document(model: Model, slo: SLO) -> dict[str, Any]:
    notes = {d.A_SLI: slo.sli}
    if slo.min_events is not None:
        notes[d.A_MIN_EVENTS] = str(slo.min_events)
    if slo.exhaustion_within is not None:
        notes[d.A_EXHAUSTION] = format_duration(slo.exhaustion_within)
    if slo.page_within is not None:
        notes[d.A_PAGE_WITHIN] = format_duration(slo.page_within)
    meta = _metadata(f"{slo.request_class}-{slo.name}", notes)
    meta["annotations"][d.A_NAME] = slo.name  # the SLO's own name: metadata.name holds the class too
    meta["displayName"] = f"{slo.request_class} {slo.name}"
    objective: dict[str, Any] = {"displayName": slo.name, "target": round(slo.objective, 12)}
    if slo.threshold is not None:
        objective.update(op="lte", value=slo.threshold)
    spec: dict[str, Any] = {
        "service": openslo_name(slo.request_class),
        "indicator": indicator(model, slo),
        "timeWindow": [{"duration": slo.period_window, "isRolling": True}],
        "budgetingMethod": "Occurrences",
        "objectives": [objective],
        "alertPolicies": alerts.slo_policy_names(slo),
    }
    if slo.description:
        spec = {"description": slo.description, **spec}
    return _doc("SLO", meta, spec)


def documents(model: Model) -> dict[str, list[dict[str, Any]]]:
    """File name -> its documents."""
    periods = sorted({s.period_window for s in model.slos})
    return {
        "services.yaml": [service(rc) for rc in model.classes],
        "data-sources.yaml": [data_source(ep) for ep in model.endpoints],
        "slos.yaml": [slo_document(model, s) for s in model.slos],
        "alert-policies.yaml": [p for w in periods for p in alerts.policies(model, w)],
        "alert-notification-targets.yaml": alerts.notification_targets(model),
    }


def write(model: Model, out_dir: str | Path) -> list[Path]:
    """Write the documents, one YAML stream per kind, into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, docs in documents(model).items():
        path = out / name
        header = f"# OpenSLO v1 documents exported by m3mon from {model.source}.\n"
        path.write_text(
            header + yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
        written.append(path)
    return written
