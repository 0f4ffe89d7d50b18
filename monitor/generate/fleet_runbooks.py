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
    cv.ALERT_REPLICA_DOWN: Runbook(
        "ticket",
        "Prometheus cannot scrape one replica of a shard while another replica of the same shard is "
        "up. Nothing is lost yet: the partner claims and probes every slot, writes every scrape, and "
        "takes the evaluator lock if the dead one held it. The shard now has no spare; if the partner "
        "dies too, M3MonMonitorDown and M3MonEndpointUnmonitored page.",
        (
            '`up{job="m3mon", shard="<K>"}` shows which replica is down; '
            "`m3mon_fleet_probe_claims_total` on the partner keeps rising.",
            "The replica's logs (`docker compose logs --since 30m monitor-<K>-<r>`).",
        ),
        'up{job="m3mon"} == 0',
        "m3mon_fleet_probe_claims_total|up",
        (
            "Restart the replica (`m3mon run --shard K/N --replica NAME`); it claims slots again from "
            "the next one.",
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
