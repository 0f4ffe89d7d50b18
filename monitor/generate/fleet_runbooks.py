"""Runbook texts of the fleet alerts (:mod:`monitor.generate.fleet_rules`)."""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate.runbooks import Runbook

FLEET_RUNBOOKS: dict[str, Runbook] = {
    cv.ALERT_ENDPOINT_UNMONITORED: Runbook(
        "page",
        "No live m3mon replica exports this endpoint: every replica of the shard that owns it "
        "(hashmod of the endpoint name, `m3mon fleet plan`) is down or unreachable. Sharding is "
        "static, so no other shard takes the endpoint over: its probes and scrapes stopped, its "
        "probe SLOs see no events and cannot alert.",
        (
            '`m3mon fleet plan -c monitor.yaml` names the shard; `up{job="m3mon", shard="<K>"}` shows '
            "its replicas.",
            "The replicas' logs (`docker compose logs --since 30m monitor-<K>-a monitor-<K>-b`).",
        ),
        'count by (shard) (up{job="m3mon"} == 1)',
        "m3mon_fleet_endpoint_owned|up",
        (
            "Start a replica of the shard (`m3mon run --shard K/N`); it resumes probing at the next slot "
            "and the evaluator backfills the missed steps from what the store holds.",
            "Run each shard as an HA pair so one lost replica never pages.",
        ),
    ),
    cv.ALERT_NO_EVALUATOR: Runbook(
        "ticket",
        "No replica holds the fleet's evaluator lock (a PostgreSQL advisory lock), or no replica is "
        "up: stored evaluations, `m3mon slo status` and the weekly report are stale. The Prometheus "
        "burn-rate alerts do not depend on it.",
        (
            "`m3mon_fleet_evaluator` per replica: 0 everywhere means no replica can reach PostgreSQL "
            "(see M3MonStoreSpoolGrowing) or every replica is down.",
            "`SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory'` shows the lock holder.",
        ),
        'max(m3mon_fleet_evaluator{job="m3mon"})',
        "m3mon_fleet_evaluator|m3mon_store_backlog_items",
        (
            "Bring PostgreSQL back or start a replica; the first replica to take the lock evaluates and "
            "backfills the missed steps.",
        ),
    ),
}
