"""Store writes as plain JSON operations, so they can be spooled to disk and replayed.

Each builder turns a domain object into an ``Op`` (a JSON-able dict with an ``op`` key) and
:func:`apply_op` writes one inside the caller's transaction. Every op is idempotent: rows are
inserted keyed by their natural key, so applying an op twice leaves the same rows as once.

Natural keys: probe result (endpoint, class, kind, started_at), in fleet mode also (endpoint,
class, kind, slot); scrape interval (endpoint, end), in fleet mode also (endpoint, slot);
event slice (slo_id, endpoint, origin, end); evaluation (slo_id, window, evaluated_at); incident
(fingerprint, starts_at); server span (trace_id, span_id). Rollups are only incremented by
slices that were actually inserted.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from sqlalchemy.orm import Session

from monitor.model import Endpoint, Model
from monitor.probes.gaps import itl_histogram
from monitor.probes.result import ProbeResult
from monitor.scrape.signals import Signals
from monitor.slo.evaluate import SLOEvaluation
from monitor.slo.slices import EventSlice, slices_from_probe, slices_from_signals
from monitor.store.fingerprint import DeploymentFingerprint
from monitor.store.incidents import incident_rows
from monitor.store.repos import DeploymentRepo, EndpointRepo
from monitor.store.tables import (
    EvaluationRow,
    EventSliceRow,
    IncidentRow,
    ProbeResultRow,
    ScrapeIntervalRow,
    ServerSpanRow,
    SliceRollupRow,
)
from monitor.store.upsert import finite, insert_ignore, upsert_add, upsert_replace
from monitor.traces.span import ServerSpan

Op = dict[str, Any]
HOUR = 3600.0


def hour_end(t: float) -> float:
    """End of the rollup hour holding a slice that ends at ``t`` (hours are ``(h − 3600, h]``)."""
    return math.ceil(t / HOUR) * HOUR


def probe_op(model: Model, result: ProbeResult, slot: int | None = None) -> Op:
    """``slot`` (fleet mode): the probe's slot identity; the pair's second write of it is dropped."""
    t, u = result.timings, result.usage
    row = {
        "slot": slot,
        "endpoint": result.endpoint,
        "request_class": result.request_class,
        "kind": result.kind,
        "started_at": result.started_at,
        "ok": result.ok,
        "reason": result.reason,
        "status_code": result.status_code,
        "ttft": t.ttft,
        "ttft_answer": t.ttft_answer,
        "itl_mean": t.itl_mean,
        "tpot": t.tpot,
        "e2e": t.e2e,
        "server_queue": t.server_queue,
        "network": t.network,
        "itl_histogram": itl_histogram(t.itl_samples) if t.itl_samples else None,
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "model": result.model,
        "finish_reason": result.finish_reason,
        "trace_id": result.trace_id,
        "detail": result.detail[:1000],
        "extra": finite({"timings": t.stored(), "usage": asdict(u), "extra": dict(result.extra)}),
        "log": list(result.log),
    }
    return {
        "op": "probe",
        "row": finite(row),
        "slices": [asdict(s) for s in slices_from_probe(model, result)],
    }


def signals_op(model: Model, endpoint: str, signals: Signals, slot: int | None = None) -> Op:
    tot = signals.total
    row = {
        "slot": slot,
        "endpoint": endpoint,
        "start": signals.start,
        "end": signals.end,
        "reset": signals.reset,
        "backend": signals.backend,
        "generation": signals.generation,
        "model": signals.model,
        "requests": tot.requests,
        "request_rate": signals.request_rate,
        "prompt_tokens_per_second": signals.prompt_tokens_per_second,
        "generation_tokens_per_second": signals.generation_tokens_per_second,
        "preemptions": tot.preemptions,
        "running": tot.running,
        "waiting": tot.waiting,
        "kv_cache_usage": tot.kv_cache_usage,
        "prefix_cache_hit_rate": tot.prefix_cache_hit_rate,
        "spec_acceptance_rate": tot.spec_acceptance_rate,
        "finished": dict(tot.finished),
        "histograms": {k: h.to_dict() for k, h in tot.histograms.items()},
        "notes": list(signals.notes),
    }
    slices = [asdict(s) for s in slices_from_signals(model, endpoint, signals)]
    return {"op": "scrape", "row": finite(row), "slices": slices}


def slices_op(slices: Sequence[EventSlice]) -> Op:
    return {"op": "slices", "slices": [asdict(s) for s in slices]}


def evaluations_op(evaluations: Sequence[SLOEvaluation]) -> Op:
    rows = [
        {
            "slo_id": e.slo_id,
            "request_class": e.request_class,
            "slo_name": e.slo_name,
            "sli": e.sli,
            "window": w.window,
            "window_start": w.start,
            "evaluated_at": e.evaluated_at,
            "objective": e.objective,
            "good": w.good,
            "total": w.total,
            "attainment": w.attainment,
            "budget_remaining": w.budget_remaining,
            "burn_rate": w.burn_rate,
            "status": e.status,
            "severity": e.severity,
        }
        for e in evaluations
        for w in e.windows
    ]
    return {"op": "evaluations", "rows": rows}


def alertmanager_op(payload: dict[str, Any], received_at: float) -> Op:
    return {"op": "incidents", "rows": incident_rows(payload, received_at)}


def deployment_op(endpoint: str, fingerprint: DeploymentFingerprint, at: float) -> Op:
    return {"op": "deployment", "endpoint": endpoint, "fingerprint": fingerprint.to_dict(), "at": at}


def endpoints_op(endpoints: Sequence[Endpoint]) -> Op:
    rows = [
        {"name": e.name, "base_url": e.base_url, "backend": e.backend, "model": e.model} for e in endpoints
    ]
    return {"op": "endpoints", "rows": rows}


def spans_op(spans: Sequence[ServerSpan]) -> Op:
    return {"op": "spans", "rows": [finite(s.to_row()) for s in spans]}


def event_time(op: Op) -> float | None:
    """The earliest time at which ``op`` changes SLO event counts: its first slice's end (an SLO
    evaluation at an instant before it is not affected by the op); None for ops without slices."""
    slices = op.get("slices") if isinstance(op, dict) else None
    ends = [s.get("end") for s in slices or () if isinstance(s, dict)]
    finite_ends = [float(e) for e in ends if isinstance(e, int | float) and math.isfinite(e)]
    return min(finite_ends) if finite_ends else None


def write_slices(session: Session, slices: Sequence[dict[str, Any]]) -> int:
    """Insert new slices and add exactly those counted (not excluded by maintenance) to their hourly
    rollups; returns how many were new."""
    keys = ("slo_id", "endpoint", "origin", "end")
    new = insert_ignore(session, EventSliceRow.__table__, slices, keys)  # type: ignore[arg-type]
    sums: dict[tuple[str, float], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for s in (s for s in new if not s.get("maintenance")):
        acc = sums[(s["slo_id"], hour_end(s["end"]))]
        acc[0] += s["good"]
        acc[1] += s["total"]
    rows = [{"slo_id": k[0], "hour_end": k[1], "good": v[0], "total": v[1]} for k, v in sums.items()]
    upsert_add(session, SliceRollupRow.__table__, rows, ("slo_id", "hour_end"), ("good", "total"))  # type: ignore[arg-type]
    return len(new)


def _insert_row(session: Session, table: Any, row: dict[str, Any], keys: tuple[str, ...]) -> bool:
    """Insert one raw row; False when it was there already. A row with a fleet ``slot`` is also
    dropped when its pair partner stored the same slot first (then its slices are not written)."""
    slotted = row.get("slot") is not None
    new = insert_ignore(session, table, [row], keys, any_conflict=slotted)
    return bool(new) or not slotted


def _apply_probe(session: Session, op: Op) -> None:
    EndpointRepo(session).ensure(op["row"]["endpoint"])
    keys = ("endpoint", "request_class", "kind", "started_at")
    if _insert_row(session, ProbeResultRow.__table__, op["row"], keys):
        write_slices(session, op["slices"])


def _apply_scrape(session: Session, op: Op) -> None:
    EndpointRepo(session).ensure(op["row"]["endpoint"])
    if _insert_row(session, ScrapeIntervalRow.__table__, op["row"], ("endpoint", "end")):
        write_slices(session, op["slices"])


def _apply_slices(session: Session, op: Op) -> None:
    write_slices(session, op["slices"])


def _apply_evaluations(session: Session, op: Op) -> None:
    insert_ignore(session, EvaluationRow.__table__, op["rows"], ("slo_id", "window", "evaluated_at"))  # type: ignore[arg-type]


def _apply_incidents(session: Session, op: Op) -> None:
    update = ("status", "ends_at", "labels", "annotations", "updated_at")
    upsert_replace(session, IncidentRow.__table__, op["rows"], ("fingerprint", "starts_at"), update)  # type: ignore[arg-type]


def _apply_spans(session: Session, op: Op) -> None:
    insert_ignore(session, ServerSpanRow.__table__, op["rows"], ("trace_id", "span_id"))  # type: ignore[arg-type]


def _apply_deployment(session: Session, op: Op) -> None:
    fp = DeploymentFingerprint.from_dict(op["fingerprint"])
    DeploymentRepo(session).observe(op["endpoint"], fp, float(op["at"]))


def _apply_endpoints(session: Session, op: Op) -> None:
    EndpointRepo(session).sync(op["rows"])


APPLY: dict[str, Callable[[Session, Op], None]] = {
    "probe": _apply_probe,
    "scrape": _apply_scrape,
    "slices": _apply_slices,
    "evaluations": _apply_evaluations,
    "incidents": _apply_incidents,
    "deployment": _apply_deployment,
    "endpoints": _apply_endpoints,
    "spans": _apply_spans,
}


def apply_op(session: Session, op: Op) -> None:
    """Write one op inside the caller's transaction."""
    try:
        handler = APPLY[op["op"]]
    except (KeyError, TypeError):
        raise ValueError(f"not a store operation: {str(op)[:200]}") from None
    handler(session, op)
