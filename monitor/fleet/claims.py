"""Probe slot claims: of an HA pair, the first replica to claim a slot runs that probe.

A probe's identity in fleet mode is (endpoint, class, kind, slot), slot = floor(scheduled round
start / class interval). At the start of a round each replica inserts its claims in one
statement (``INSERT ... ON CONFLICT DO NOTHING RETURNING``); it runs only the probes whose claim it
inserted. So an endpoint sees each probe once per slot, not once per replica, and the probe
counters the replicas export add up without duplicates across a pair (Prometheus' ``sum`` needs
no dedup). When the database cannot be reached the replica runs every probe (an outage must not
stop probing): both replicas then probe, the store keeps one row per slot (the slot unique
constraint), and only the exported counters count that slot twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.exc import SQLAlchemyError

from monitor.store import Store
from monitor.store.tables import ProbeClaimRow
from monitor.store.upsert import insert_ignore

log = logging.getLogger(__name__)

#: (endpoint, request class, probe kind, slot)
SlotKey = tuple[str, str, str, int]
KEYS = ("endpoint", "request_class", "kind", "slot")


def slot_of(t: float, interval: float) -> int:
    """The slot holding instant ``t`` for a schedule of period ``interval`` (aligned to the epoch)."""
    return int(t // interval)


def claim(store: Store, keys: Sequence[SlotKey], replica: str, now: float) -> set[SlotKey] | None:
    """The keys this replica won; None when the database could not be asked (run them all)."""
    if not keys:
        return set()
    rows = [dict(zip(KEYS, k, strict=True)) | {"replica": replica, "claimed_at": now} for k in keys]
    try:
        with store.session() as s:
            won = insert_ignore(s, ProbeClaimRow.__table__, rows, KEYS)  # type: ignore[arg-type]
    except SQLAlchemyError as exc:
        log.warning("probe claims unavailable (%s): running every probe of the round", type(exc).__name__)
        return None
    return {(r["endpoint"], r["request_class"], r["kind"], r["slot"]) for r in won}
