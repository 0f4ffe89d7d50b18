"""The fleet a configuration describes, or the default one compose shows: 2 shards x 2 replicas."""

from __future__ import annotations

import dataclasses

from monitor.model import Model
from monitor.model_service import Fleet, FleetMonitor

DEFAULT_SHARDS = 2
REPLICAS = ("a", "b")
#: Replica K/r listens on FIRST_PORT + 2K + index(r) (compose fleet profile, host network).
FIRST_PORT = 9471
#: The fleet profile's Prometheus listens here (the core Prometheus keeps 9090).
FLEET_PROMETHEUS_PORT = 9091


def default_monitors(shards: int) -> tuple[FleetMonitor, ...]:
    return tuple(
        FleetMonitor(k, r, f"127.0.0.1:{FIRST_PORT + len(REPLICAS) * k + i}")
        for k in range(shards)
        for i, r in enumerate(REPLICAS)
    )


def fleet_layout(model: Model) -> Model:
    """``model`` with its ``fleet`` section, or the default pair layout when it has no monitors."""
    if model.fleet.monitors:
        return model
    shards = model.fleet.shards if model.fleet.shards > 1 else DEFAULT_SHARDS
    return dataclasses.replace(model, fleet=Fleet(shards=shards, monitors=default_monitors(shards)))
