"""Rows as the ops write them: a scrape interval's row, and event slices with their hourly rollups.

:func:`write_slices` inserts new slices and adds exactly those counted (not excluded by
maintenance) to their rollup hour; :func:`remove_server_slices` takes an interval's slices out
again (the store splits an interval when a reading between its ends arrives late,
:mod:`monitor.store.readings`). Both mark the SLOs whose already evaluated steps they change
(:func:`monitor.store.progress.mark_late`), so those steps are evaluated again.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from monitor.scrape.signals import Signals
from monitor.slo.slices import SOURCE_SERVER
from monitor.store.progress import mark_late
from monitor.store.tables import EventSliceRow, SliceRollupRow
from monitor.store.upsert import insert_ignore, upsert_add

HOUR = 3600.0
SLICE_KEYS = ("slo_id", "endpoint", "origin", "end")


def hour_end(t: float) -> float:
    """End of the rollup hour holding a slice that ends at ``t`` (hours are ``(h − 3600, h]``)."""
    return math.ceil(t / HOUR) * HOUR


def signals_row(endpoint: str, signals: Signals, slot: int | None = None) -> dict[str, Any]:
    """The ``scrape_intervals`` row of one interval (``slot``: its end reading's, in fleet mode)."""
    tot = signals.total
    return {
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
        "admission_rejections": tot.admission_rejections,
        "http_status": dict(tot.http_status) or None,
        "running": tot.running,
        "waiting": tot.waiting,
        "kv_cache_usage": tot.kv_cache_usage,
        "prefix_cache_hit_rate": tot.prefix_cache_hit_rate,
        "spec_acceptance_rate": tot.spec_acceptance_rate,
        "finished": dict(tot.finished),
        "histograms": {k: h.to_dict() for k, h in tot.histograms.items()},
        "notes": list(signals.notes),
    }


def _rollups(session: Session, slices: Iterable[Mapping[str, Any]], sign: float) -> None:
    """Add (``sign`` 1) or take out (−1) the counted slices' events from their rollup hours, and
    mark the SLOs whose evaluated steps that changes."""
    sums: dict[tuple[str, float], list[float]] = defaultdict(lambda: [0.0, 0.0])
    earliest: dict[str, float] = {}
    for s in (s for s in slices if not s.get("maintenance")):
        acc = sums[(s["slo_id"], hour_end(s["end"]))]
        acc[0] += sign * s["good"]
        acc[1] += sign * s["total"]
        earliest[s["slo_id"]] = min(earliest.get(s["slo_id"], s["end"]), s["end"])
    rows = [{"slo_id": k[0], "hour_end": k[1], "good": v[0], "total": v[1]} for k, v in sums.items()]
    upsert_add(session, SliceRollupRow.__table__, rows, ("slo_id", "hour_end"), ("good", "total"))  # type: ignore[arg-type]
    mark_late(session, earliest)


def write_slices(session: Session, slices: Sequence[dict[str, Any]]) -> int:
    """Insert new slices and add exactly those counted (not excluded by maintenance) to their hourly
    rollups; returns how many were new."""
    new = insert_ignore(session, EventSliceRow.__table__, slices, SLICE_KEYS)  # type: ignore[arg-type]
    _rollups(session, new, 1.0)
    return len(new)


def remove_server_slices(session: Session, endpoint: str, end: float) -> int:
    """Delete the server slices of the interval ending at ``end`` and take them out of the rollups."""
    s = EventSliceRow
    where = (s.endpoint == endpoint, s.origin == SOURCE_SERVER, s.end == end)
    cols = (s.slo_id, s.end, s.good, s.total, s.maintenance)
    found = [dict(r._mapping) for r in session.execute(select(*cols).where(*where))]
    _rollups(session, found, -1.0)
    session.execute(delete(s).where(*where))
    return len(found)
