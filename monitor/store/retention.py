"""Retention: raw probe results, server spans, scrape intervals, gaps, GPU samples and event slices
older than the retention go; scrape readings after a day.

Evaluations and hourly slice rollups are kept: they are small (one row per SLO per step,
one per SLO per hour) and they are what the SLO period and the reports read. The pruned
horizon is remembered in ``store_meta`` so window counting knows where raw slices end.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.orm import Session

from monitor.store.counts import PRUNED_KEY, pruned_before, remember_history_start
from monitor.store.tables import (
    EventSliceRow,
    GpuSampleRow,
    MetaRow,
    ProbeClaimRow,
    ProbeResultRow,
    ScrapeGapRow,
    ScrapeIntervalRow,
    ScrapeReadingRow,
    ServerSpanRow,
)

#: Readings are kept a day (or the retention, if shorter): long enough for any replica's late
#: reading to split the interval it falls in (:mod:`monitor.store.readings`).
KEEP_READINGS = 86400.0


@dataclass(frozen=True)
class Pruned:
    """How many rows one retention pass removed."""

    probe_results: int
    scrape_intervals: int
    event_slices: int
    server_spans: int = 0
    scrape_readings: int = 0


def prune(session: Session, now: float, retention: float) -> Pruned:
    """Delete raw rows older than ``now − retention`` inside the caller's transaction."""
    cutoff = now - retention
    remember_history_start(session)
    counts = []
    for stmt in (
        delete(ProbeResultRow).where(ProbeResultRow.started_at < cutoff),
        delete(ScrapeIntervalRow).where(ScrapeIntervalRow.end < cutoff),
        delete(EventSliceRow).where(EventSliceRow.end <= cutoff),
        delete(ServerSpanRow).where(ServerSpanRow.start_time < cutoff),
    ):
        counts.append(int(getattr(session.execute(stmt), "rowcount", 0)))
    session.execute(delete(ProbeClaimRow).where(ProbeClaimRow.claimed_at < cutoff))  # fleet slot claims
    session.execute(delete(ScrapeGapRow).where(ScrapeGapRow.end < cutoff))
    session.execute(delete(GpuSampleRow).where(GpuSampleRow.time < cutoff))
    readings = delete(ScrapeReadingRow).where(ScrapeReadingRow.time < now - min(retention, KEEP_READINGS))
    counts.append(int(getattr(session.execute(readings), "rowcount", 0)))
    if cutoff > pruned_before(session):
        session.merge(MetaRow(key=PRUNED_KEY, value=cutoff))
    return Pruned(*counts)
