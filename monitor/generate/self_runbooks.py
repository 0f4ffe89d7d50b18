"""Runbook texts of the monitor's alerts about itself (:mod:`monitor.generate.self_rules`)."""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import self_rules as sr
from monitor.generate.runbooks import Runbook

_LOGS = "The monitor's log (`docker compose logs --since 30m monitor`, or `--log.format json` and a filter)."
_READY = "`curl -s -u <user> http://<monitor>/-/ready` lists what keeps it from being ready."

SELF_RUNBOOKS: dict[str, Runbook] = {
    cv.ALERT_EVALUATION_STALE: Runbook(
        "ticket",
        f"The monitor's `evaluate` task has not succeeded for more than {sr.EVALUATION_STALE_AFTER // 60} "
        "minutes. It runs every 15 s and succeeds even when no step is due, so SLO evaluation has "
        "stopped: stored evaluations, the exporter's `m3mon_slo_*` gauges, `m3mon slo status` and the "
        "weekly report are stale. The Prometheus burn-rate alerts do not depend on it.",
        (
            _READY,
            '`m3mon_job_runs_total{task="evaluate"}` by result: `failure` (an error, see the log) or '
            "`skipped` (writes are spooled because the database is away; see M3MonStoreSpoolGrowing).",
            _LOGS + " Look for `job evaluate failed` with its traceback.",
        ),
        'time() - m3mon_job_last_success_timestamp_seconds{task="evaluate"}',
        "m3mon_job_runs_total|m3mon_store_backlog_items",
        (
            "Database away: bring it back; the spool replays and evaluation backfills the missed steps.",
            "An error in the log: file a bug with the traceback; restarting the monitor resumes "
            "evaluation where the store says it stopped.",
        ),
    ),
    cv.ALERT_PROBES_NOT_RUNNING: Runbook(
        "ticket",
        "No probe round of the class completed for longer than max(10 min, 2 × its probe interval + "
        "timeout). The class's probe SLOs see no events: they can neither attain nor alert.",
        (
            '`m3mon_job_runs_total{task="probe:<class>"}` by result: failures mean the round raises '
            "(see the log); no runs at all mean the scheduler stopped or the round never ends.",
            _READY,
            _LOGS + " Look for `job probe:<class> failed` or `skipped: maximum number of running instances`.",
        ),
        'time() - m3mon_job_last_success_timestamp_seconds{task=~"probe:.*"}',
        "m3mon_job_runs_total|m3mon_job_last_success_timestamp_seconds",
        (
            "A round that never ends: check the class's `probe.timeout` and the endpoints it probes.",
            "Rounds that fail: file a bug with the traceback; `m3mon probe -c monitor.yaml --once "
            "--class <class>` reproduces it.",
            "Restart the monitor if its scheduler stopped (`/-/ready` says so).",
        ),
    ),
    cv.ALERT_RECEIVER_REJECTING: Runbook(
        "ticket",
        f"At least {sr.RECEIVER_REJECTIONS} requests to `/alertmanager` or `/v1/traces` were refused in "
        f"{sr.RECEIVER_WINDOW}. The `reason` label says why: `unauthorized` (wrong or missing "
        "credentials), `too_large`, `invalid` (a field the store cannot hold), `unsupported` (content "
        "type or encoding). What those requests carried (incidents, vLLM request spans) is lost.",
        (
            _LOGS
            + " Each refusal is logged with the field or cause (`refused a request to the … receiver`).",
            "`unauthorized`: does the sender's password file match the web config's bcrypt hash "
            "(after a rotation, both must change)?",
            "Anything else: which sender? vLLM's exporter logs the HTTP status it got back.",
        ),
        "sum by (receiver, reason) (increase(m3mon_receiver_rejected_total[10m]))",
        "m3mon_receiver_rejected_total",
        (
            "Fix the sender's credentials (`secrets/m3mon_password`, the web config) and restart it.",
            "`invalid` from vLLM: a request id or value the store cannot hold; file a bug with the log line.",
            "Unknown senders: keep the monitor on loopback or behind the web config's basic auth.",
        ),
    ),
    cv.ALERT_EVENT_LOOP_BLOCKED: Runbook(
        "ticket",
        f"The monitor's event loop ran its work {sr.LOOP_BLOCKED_SECONDS} s or more late in all over "
        f"{sr.LOOP_WINDOW}: one long hold or a steady starvation. Everything time-bound runs on that loop: "
        "probe rounds started late and their timeouts fired late, scrapes and exporter requests waited "
        "(Prometheus may have seen the monitor down meanwhile). Probe latencies come from kernel receive "
        "stamps and stay right; how many probes ran, and when, does not.",
        (
            "`histogram_quantile(0.99, rate(m3mon_event_loop_lag_seconds_bucket[5m]))`: long holds (seconds) "
            "or a steady lag (every tick hundreds of ms late: a starved process)?",
            '`rate(process_cpu_seconds_total{job="m3mon"}[5m])` against the container\'s CPU limit, and '
            "`rate(m3mon_job_cpu_seconds_total[5m])` by kind: which work takes the CPU.",
            _LOGS + " Look for a job whose run takes as long as the hold.",
        ),
        "increase(m3mon_event_loop_lag_seconds_sum[10m])",
        "m3mon_event_loop_lag_seconds|m3mon_job_cpu_seconds_total",
        (
            "Starved: give the monitor a CPU of its own (raise the limit or request), or split the probe "
            "load over a fleet of monitors (docs/fleet.md).",
            "One kind of work holds it: file a bug with the kind and the log around the hold.",
        ),
    ),
    cv.ALERT_METRIC_FAMILY_GONE: Runbook(
        "ticket",
        "An engine family that the monitor's generated rules, an SLO or a dashboard reads was on the "
        f"endpoint's page within the last {cv.METRIC_FAMILY_MEMORY} and is not now. Usually a vLLM upgrade "
        "renamed it (`status=removed`, `replacement` names the new family), or a restart dropped a flag "
        "that registers it (`status=flag`). Whatever reads it now gets no data, silently: empty panels, "
        "an SLO with no events.",
        (
            "`m3mon check-config monitor.yaml --metrics <endpoint>=<its /metrics URL>` lists every needed "
            "family with who needs it and why it is missing.",
            "`m3mon_deployment_info{endpoint=...}`: did the vLLM version or image change at that time?",
            _LOGS + " Look for `metric drift:` lines.",
        ),
        "m3mon_metric_family_served == 0",
        "m3mon_metric_family_served",
        (
            "`flag`: restart vLLM with the flag the status names (e.g. `--kv-cache-metrics`).",
            "`removed` or `renamed`: the server's version and the monitor's names disagree; upgrade the one "
            "that is behind (a newer m3mon reads the new names), or pin vLLM back.",
            "`label`: the counter no longer carries the value an SLI counts; read the vLLM release notes.",
        ),
    ),
}
