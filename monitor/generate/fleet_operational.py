"""Pair-aware forms of the monitor's own alerts, for a fleet (``alerts/fleet/operational.rules.yml``).

In a fleet every replica exports the same monitor series under its own ``instance``/``replica``
(and ``shard``) labels, so the single-replica rules in ``alerts/operational.rules.yml`` would fire
once per replica, and ``M3MonMonitorDown`` would page for one dead replica of a healthy pair. The
fleet Prometheus (``deploy/prometheus-fleet.yml``) loads this file instead; same names, runbooks
and thresholds:

* ``M3MonMonitorDown`` (page): *every* replica of a shard is down (``max by (job, shard) (up)``).
  One dead replica of a pair is ``M3MonReplicaDown`` (ticket, :mod:`monitor.generate.fleet_rules`).
* ``M3MonScrapeFailing``: no replica of the pair scrapes the endpoint. One replica's failed scrape
  loses nothing: its partner writes the slot.
* ``M3MonProbesNotRunning``: no replica of the shard completed a round of the class (counted from
  the pair's freshest success). One stuck replica loses nothing: its partner claims the slots.
* ``M3MonEvaluationStale``, ``M3MonStoreSpoolGrowing``: one alert for the fleet (worst replica),
  not one per replica: a database outage stalls them all at once.
* ``M3MonMaintenanceInProgress``: one alert per window, whichever replicas export it.

The others are left as they are: the vLLM alerts read vLLM's series (scraped once), the probe
alerts sum over replicas (each slot is probed by one replica), and dead letters and receiver
rejections name the ``instance`` where they happen.
"""

from __future__ import annotations

import dataclasses

from monitor import conventions as cv
from monitor.generate import operational_rules as op
from monitor.generate import promql as q
from monitor.generate.maintenance_rules import maintenance_groups
from monitor.generate.operational_rules import operational_groups
from monitor.generate.rules import Alert, Group
from monitor.generate.self_rules import EVALUATION_STALE_AFTER, probes_stale_after, task_age
from monitor.generate.sli import boundary
from monitor.model import Model

#: Labels that tell the replicas of one fleet apart (the target labels of prometheus-fleet.yml).
REPLICA_LABELS = f"instance, {cv.L_REPLICA}"
PAIR = f"job, {cv.L_SHARD}"


def monitor_down_expr(model: Model) -> str:
    """Shards none of whose replicas Prometheus can scrape."""
    return f"max by ({PAIR}) (up{q.monitor_selector(model.alerting)}) == 0"


def replica_down_expr(model: Model) -> str:
    """Replicas Prometheus cannot scrape while another replica of their shard is up."""
    up = f"up{q.monitor_selector(model.alerting)}"
    return f"{up} == 0\nand on ({PAIR})\nmax by ({PAIR}) ({up}) == 1"


def _pair_probe_age(model: Model, request_class: str) -> str:
    success = cv.JOB_LAST_SUCCESS + q.monitor_selector(
        model.alerting, **{cv.L_TASK: cv.probe_task(request_class)}
    )
    started = cv.PROCESS_START_TIME + q.monitor_selector(model.alerting)
    age = f"time() - max by ({PAIR}) ({success} or {started})"
    stale = probes_stale_after(model, request_class)
    return f'label_replace({age}, "{cv.L_CLASS}", "{request_class}", "", "")\n  > {stale}'


def _forms(model: Model) -> dict[str, tuple[str, str, str]]:
    """Alert name → (expression, summary, description) of its fleet form."""
    mon = q.monitor_selector(model.alerting)
    backlog = cv.STORE_BACKLOG + mon
    starts, ends = (f"max without ({REPLICA_LABELS}, {cv.L_SHARD}) ({boundary(m + mon)})"
                    for m in (cv.MAINTENANCE_START, cv.MAINTENANCE_END))  # fmt: skip
    return {
        cv.ALERT_MONITOR_DOWN: (
            monitor_down_expr(model),
            "No replica of m3mon shard {{ $labels.shard }} is being scraped",
            "Prometheus cannot scrape any replica of shard {{ $labels.shard }}: its endpoints are probed "
            "and scraped by nobody and their probe SLOs are blind.",
        ),
        cv.ALERT_SCRAPE_FAILING: (
            f"max without ({REPLICA_LABELS}) ({cv.SCRAPE_SUCCESS}{mon}) == 0",
            "m3mon cannot scrape {{ $labels.endpoint }}",
            "No replica of shard {{ $labels.shard }} has scraped {{ $labels.endpoint }} /metrics for "
            "5 minutes.",
        ),
        cv.ALERT_PROBES_NOT_RUNNING: (
            "\nor\n".join(_pair_probe_age(model, c.name) for c in model.classes),
            "m3mon's {{ $labels.class }} probes have not run for {{ $value | humanizeDuration }}",
            "No replica of shard {{ $labels.shard }} completed a probe round of class {{ $labels.class }} "
            "for {{ $value | humanizeDuration }}: the class's probe SLOs see no events from its endpoints.",
        ),
        cv.ALERT_EVALUATION_STALE: (
            f"max by (job) (\n  {task_age(model, cv.TASK_EVALUATE)}\n) > {EVALUATION_STALE_AFTER}",
            "An m3mon replica has not run its evaluate task for {{ $value | humanizeDuration }}",
            "The evaluate task of at least one replica has not completed for {{ $value | humanizeDuration }} "
            "(the worst replica). On the evaluator that means stored evaluations, `m3mon slo status` and the "
            "report are stale; `m3mon_job_last_success_timestamp_seconds` per instance names it.",
        ),
        cv.ALERT_STORE_SPOOL_GROWING: (
            f"max by (job) (\n  {backlog} > 0\n  and\n  deriv({backlog}[{op.SPOOL_WINDOW}]) > 0\n)",
            "m3mon replicas cannot write to their database; the spool keeps growing",
            '{{ printf "%.0f" $value }} store writes are spooled on the worst replica and spools have '
            f"grown for {op.SPOOL_FOR}: the database is unreachable or refuses writes. Stored evaluations, "
            "`m3mon slo status` and the weekly report lag until it is back.",
        ),
        cv.ALERT_MAINTENANCE: (f"{starts} < time()\nand\n{ends} >= time()", "", ""),
    }


def _pair_aware(alert: Alert, forms: dict[str, tuple[str, str, str]]) -> Alert:
    if alert.name not in forms:
        return alert
    expr, summary, description = forms[alert.name]
    return dataclasses.replace(
        alert, expr=expr, summary=summary or alert.summary, description=description or alert.description
    )


def fleet_operational_groups(model: Model) -> list[Group]:
    """The operational, self and maintenance groups with the per-replica alerts in fleet form."""
    forms = _forms(model)
    return [
        dataclasses.replace(g, alerts=tuple(_pair_aware(a, forms) for a in g.alerts))
        for g in operational_groups(model) + maintenance_groups(model)
    ]
