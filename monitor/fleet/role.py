"""This process's part in a fleet: its shard, its replica name, the evaluator lock, its metrics.

``m3mon run --shard K/N`` (or ``fleet.shard``/``fleet.shards``) makes a replica own the endpoints
whose hashmod is K (:mod:`monitor.fleet.shard`) for scrapes, health checks and probes. Spans
received on ``/v1/traces`` are stored whoever owns their endpoint: a span names no endpoint the
replica could check, each pool's vLLM sends to one configured URL, and (trace_id, span_id) makes
a span sent to two replicas one row. Fleet mode needs PostgreSQL (advisory locks, concurrent
writers); SQLite refuses it.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge
from sqlalchemy.engine import make_url

from monitor import conventions as cv
from monitor.errors import UsageError
from monitor.fleet.leader import EvaluatorLock
from monitor.fleet.shard import Shard
from monitor.model import Model
from monitor.store.engine import normalize_url


class FleetMetrics:
    """The fleet gauges a replica exports (names in :mod:`monitor.conventions`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        held = "1 while this replica holds the fleet's evaluator lock, else 0."
        self.evaluator = Gauge(cv.FLEET_EVALUATOR, held, registry=registry)
        self.owned = Gauge(cv.FLEET_ENDPOINT_OWNED, "1 per endpoint this replica's shard owns.",
                           [cv.L_ENDPOINT, cv.L_SHARD], registry=registry)  # fmt: skip
        claims = ("Probe slots by claim result: won (this replica probes), lost (its pair partner "
                  "does), unavailable (no database: probed anyway).")  # fmt: skip
        self.claims = Counter(cv.FLEET_PROBE_CLAIMS, claims, [cv.L_RESULT], registry=registry)

    def own(self, shard: Shard, model: Model) -> None:
        self.owned.clear()
        for e in model.endpoints:
            self.owned.labels(e.name, str(shard.index)).set(1)


@dataclass
class FleetRole:
    shard: Shard
    replica: str
    lock: EvaluatorLock
    metrics: FleetMetrics | None = None


def fleet_role(
    model: Model, shard_flag: str | None = None, replica_flag: str | None = None
) -> FleetRole | None:
    """The role asked for by flags or ``fleet:``; None for a single replica. Raises UsageError."""
    f = model.fleet
    requested = shard_flag or replica_flag or f.shard is not None or f.shards > 1 or f.replica
    if not requested:
        return None
    if make_url(normalize_url(model.storage.url)).get_backend_name() != "postgresql":
        raise UsageError("fleet mode (--shard, --replica, fleet.shard/shards/replica) needs PostgreSQL "
                         "(storage.url); SQLite stays the single-replica store")  # fmt: skip
    if shard_flag:
        shard = Shard.parse(shard_flag)
    elif f.shard is not None:
        shard = Shard(f.shard, f.shards)
    elif f.shards == 1:
        shard = Shard(0, 1)
    else:
        raise UsageError(
            f"fleet.shards is {f.shards} but this replica's shard is not set: pass --shard K/{f.shards}"
        )
    replica = replica_flag or f.replica or f"{socket.gethostname()}-{os.getpid()}"
    return FleetRole(shard, replica, EvaluatorLock(model.storage.url))
