"""Store writes as plain JSON operations, so they can be spooled to disk and replayed.

Each builder turns a domain object into an ``Op`` (a JSON-able dict with an ``op`` key) and
:func:`apply_op` writes one inside the caller's transaction. Every op is idempotent: rows are
inserted keyed by their natural key, so applying an op twice leaves the same rows as once.

Natural keys: probe result (endpoint, class, kind, started_at), in fleet mode also (endpoint,
class, kind, slot); scrape reading (endpoint, time), in fleet mode also (endpoint, slot), from
which the store derives the scrape intervals (endpoint, end) (:mod:`monitor.store.readings`);
event slice (slo_id, endpoint, origin, end); evaluation (slo_id, evaluated_at); incident
(fingerprint, starts_at); server span (trace_id, span_id). Rollups are only incremented by
slices that were actually inserted.

A ``reading`` op needs the model (which SLOs an interval's events feed, and maintenance): pass it
to :func:`apply_op`. Evaluations are inserted once, or replaced (``replace``: the evaluator
evaluates a step again after a late write, :mod:`monitor.store.progress`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy.orm import Session

from monitor import conventions as cv
from monitor.errors import StoreError
from monitor.model import Endpoint, Model
from monitor.probes.gaps import itl_histogram
from monitor.probes.result import ProbeResult
from monitor.scrape.gpu_signals import GpuSignals
from monitor.scrape.signals import Signals
from monitor.slo.columns import WINDOW_KEYS, StepEvaluations
from monitor.slo.evaluate import SLOEvaluation
from monitor.slo.slices import EventSlice, slices_from_probe, slices_from_signals
from monitor.store.fingerprint import DeploymentFingerprint
from monitor.store.incidents import incident_rows
from monitor.store.readings import apply_reading
from monitor.store.repos import DeploymentRepo, EndpointRepo
from monitor.store.rows import hour_end, signals_row, write_slices
from monitor.store.tables import (
    EvaluationRow,
    GpuSampleRow,
    IncidentRow,
    ProbeResultRow,
    ScrapeIntervalRow,
    ServerSpanRow,
)
from monitor.store.upsert import finite, insert_ignore, insert_many_ignore, upsert_replace
from monitor.traces.span import ServerSpan

Op = dict[str, Any]
__all__ = ["Op", "apply_op", "event_time", "hour_end", "write_slices"]


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
        "extra": finite(_extra(result)),
        "log": list(result.log),
    }
    return {
        "op": "probe",
        "row": finite(row),
        "slices": [asdict(s) for s in slices_from_probe(model, result)],
    }


#: Key of ``probe_results.extra`` holding when the run's outcome was known (its SLI events' time).
COMPLETED_AT = "completed_at"


def _extra(result: ProbeResult) -> dict[str, Any]:
    t, u = result.timings, result.usage
    return {
        "timings": t.stored(),
        "usage": asdict(u),
        "extra": dict(result.extra),
        COMPLETED_AT: result.completed_at,
        cv.PURPOSE_KEY: result.purpose,
    }


def signals_op(model: Model, endpoint: str, signals: Signals, slot: int | None = None) -> Op:
    """An interval computed by its writer (bulk loads of one writer per endpoint: the history
    generator); the service writes readings instead (:func:`monitor.store.readings.reading_op`)."""
    slices = [asdict(s) for s in slices_from_signals(model, endpoint, signals)]
    return {"op": "scrape", "row": finite(signals_row(endpoint, signals, slot)), "slices": slices}


def slices_op(slices: Sequence[EventSlice]) -> Op:
    return {"op": "slices", "slices": [asdict(s) for s in slices]}


def evaluation_row(e: SLOEvaluation) -> dict[str, Any]:
    """The stored row of one evaluation: the SLO at one instant, its windows as one JSON object
    of columns (:class:`monitor.store.tables.EvaluationRow`)."""
    columns: dict[str, list[Any]] = {k: [] for k in WINDOW_KEYS}
    for w in e.windows:
        columns["window"].append(w.window)
        columns["start"].append(w.start)
        columns["good"].append(w.good)
        columns["total"].append(w.total)
        columns["attainment"].append(_finite(w.attainment))
        columns["budget_remaining"].append(_finite(w.budget_remaining))
        columns["burn_rate"].append(_finite(w.burn_rate))
    return {
        "slo_id": e.slo_id,
        "evaluated_at": e.evaluated_at,
        "request_class": e.request_class,
        "slo_name": e.slo_name,
        "sli": e.sli,
        "objective": e.objective,
        "status": e.status,
        "severity": e.severity,
        "windows": columns,
    }


def _finite(x: float | None) -> float | None:
    """A ratio as stored: NaN and ±Inf (none arise from finite counts) as None."""
    return x if x is None or math.isfinite(x) else None


def evaluations_op(evaluations: Sequence[SLOEvaluation], replace: bool = False) -> Op:
    """``replace``: overwrite the stored row of the same (SLO, instant) (a step evaluated again)."""
    rows = (
        evaluations.rows()
        if isinstance(evaluations, StepEvaluations)
        else [evaluation_row(e) for e in evaluations]
    )
    return {"op": "evaluations", "rows": rows, "replace": replace}


def alertmanager_op(payload: dict[str, Any], received_at: float) -> Op:
    return {"op": "incidents", "rows": incident_rows(payload, received_at)}


def deployment_op(endpoint: str, fingerprint: DeploymentFingerprint, at: float) -> Op:
    return {"op": "deployment", "endpoint": endpoint, "fingerprint": fingerprint.to_dict(), "at": at}


def endpoints_op(endpoints: Sequence[Endpoint]) -> Op:
    rows = [
        {"name": e.name, "base_url": e.base_url, "backend": e.backend, "model": e.model} for e in endpoints
    ]
    return {"op": "endpoints", "rows": rows}


def gpu_op(signals: GpuSignals) -> Op:
    """One good GPU exporter scrape as the verdict reads it (the ``gpu_samples`` row)."""
    a = signals.aggregate()
    row = {"endpoint": signals.endpoint, "time": signals.end, "exporter": signals.exporter, "gpus": a["gpus"],
           "util": a["util_mean"], "sm_active": a["sm_active_mean"], "tensor_active": a["tensor_active_mean"],
           "memory_used_ratio": a["memory_used_ratio_max"], "xid_gpus": len(a["xid_gpus"]),
           "devices": signals.device_readings()}  # fmt: skip
    return {"op": "gpu", "row": finite(row)}


def spans_op(spans: Sequence[ServerSpan]) -> Op:
    return {"op": "spans", "rows": [finite(s.to_row()) for s in spans]}


def event_time(op: Op) -> float | None:
    """The earliest time at which ``op`` changes SLO event counts: its first slice's end, or a
    reading's time (the intervals it bounds end there or later); an SLO evaluation at an instant
    before it is not affected by the op. None for ops without events."""
    if isinstance(op, dict) and op.get("op") == "reading":
        t = op.get("reading", {}).get("time") if isinstance(op.get("reading"), dict) else None
        return float(t) if isinstance(t, int | float) and math.isfinite(t) else None
    slices = op.get("slices") if isinstance(op, dict) else None
    ends = [s.get("end") for s in slices or () if isinstance(s, dict)]
    finite_ends = [float(e) for e in ends if isinstance(e, int | float) and math.isfinite(e)]
    return min(finite_ends) if finite_ends else None


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


EVALUATION_KEY = ("slo_id", "evaluated_at")
_EVALUATION_VALUES = ("request_class", "slo_name", "sli", "objective", "status", "severity", "windows")


def _apply_evaluations(session: Session, op: Op) -> None:
    table = EvaluationRow.__table__
    if op.get("replace"):
        upsert_replace(session, table, op["rows"], EVALUATION_KEY, _EVALUATION_VALUES)  # type: ignore[arg-type]
    else:
        insert_many_ignore(session, table, op["rows"], EVALUATION_KEY)  # type: ignore[arg-type]


def _apply_incidents(session: Session, op: Op) -> None:
    update = ("status", "ends_at", "labels", "annotations", "updated_at")
    upsert_replace(session, IncidentRow.__table__, op["rows"], ("fingerprint", "starts_at"), update)  # type: ignore[arg-type]


def _apply_spans(session: Session, op: Op) -> None:
    insert_ignore(session, ServerSpanRow.__table__, op["rows"], ("trace_id", "span_id"))  # type: ignore[arg-type]


def _apply_gpu(session: Session, op: Op) -> None:
    EndpointRepo(session).ensure(op["row"]["endpoint"])
    insert_ignore(session, GpuSampleRow.__table__, [op["row"]], ("endpoint", "time"))  # type: ignore[arg-type]


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
    "gpu": _apply_gpu,
}


@dataclass(frozen=True)
class Applied:
    """What applying one op did worth counting: a reading's outcome and the gaps it recorded."""

    reading: str | None = None
    gaps: int = 0


def apply_op(session: Session, op: Op, model: Model | None = None) -> Applied:
    """Write one op inside the caller's transaction (``model``: needed by ``reading`` ops)."""
    kind = op.get("op") if isinstance(op, dict) else None
    if kind == "reading":
        if model is None:
            raise StoreError("a scrape reading needs the model to derive its intervals' SLI events")
        outcome, gaps = apply_reading(session, op, model)
        return Applied(outcome, gaps)
    try:
        handler = APPLY[str(kind)]
    except KeyError:
        raise ValueError(f"not a store operation: {str(op)[:200]}") from None
    handler(session, op)
    return Applied()
