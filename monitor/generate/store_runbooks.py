"""Runbook texts of the store alerts (dead-lettered writes, a growing spool:
:mod:`monitor.generate.operational_rules`)."""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import operational_rules as op
from monitor.generate.runbooks import Runbook

STORE_RUNBOOKS: dict[str, Runbook] = {
    cv.ALERT_STORE_DEAD_LETTERS: Runbook(
        "ticket",
        "A store write failed for a reason of its own, not because the database was away: a value "
        "longer than its column (an Alertmanager fingerprint over 64 characters, a span request_id "
        "over 200), a NUL byte, a violated constraint, a malformed op. Retrying it would fail forever "
        "and hold up every write behind it, so m3mon wrote it to `dead-letters.jsonl` in "
        "`storage.buffer_dir` (one JSON line: time, reason, error class, SQLSTATE, message and the op) "
        "and went on. That op's data is not in the database; the writes after it are.",
        (
            "`tail -n 5 <buffer_dir>/dead-letters.jsonl | jq -c '{time, reason, error, sqlstate, message, "
            "kind: .op.op}'`: which kind of write, which error.",
            "`m3mon_store_dead_letters_total` by reason: one odd payload, or a steady stream (a sender "
            "out of step with the schema's limits)?",
            "The monitor's log: the ERROR line `store: <kind> op set aside in ...`.",
        ),
        f"sum by (instance, reason) (increase(m3mon_store_dead_letters_total[{op.DEAD_LETTERS_WINDOW}]))",
        "m3mon_store_dead_letters_total",
        (
            "data_error from `/alertmanager` or `/v1/traces` payloads: find the sender with over-long or "
            "binary fields and fix it; such payloads should be rejected at the receiver with a 400, so file "
            "a bug against m3-monitor with the dead-letter line.",
            "integrity_error, invalid_op or other: a bug in m3mon; file it with the dead-letter line.",
            "m3mon never re-reads the file: once the cause is understood, archive it "
            "(`mv dead-letters.jsonl dead-letters.$(date +%F).jsonl`).",
        ),
    ),
    cv.ALERT_STORE_SPOOL_GROWING: Runbook(
        "ticket",
        "m3mon cannot write to its database and keeps spooling writes to `spool.jsonl` in "
        f"`storage.buffer_dir`, and the spool has grown for {op.SPOOL_FOR}: the database is unreachable, "
        "restarting, read-only (a standby after a failover), full, lacks grants, or is not migrated. "
        "Nothing is lost, the spool is replayed in order once the database takes writes, but stored "
        "evaluations, `m3mon slo status` and the weekly report lag, and the spool grows on the "
        "monitor's disk. Prometheus' own SLO alerts are not affected.",
        (
            "The monitor's log: `store unavailable, buffering writes: database unreachable: "
            "postgresql+psycopg://m3mon:***@... (connection refused)` names the database and the reason.",
            "`m3mon db current -c monitor.yaml` on the monitor host: reachable, migrated?",
            "Free space under `storage.buffer_dir` (`df -h`, `du -sh`).",
        ),
        "m3mon_store_backlog_items",
        "m3mon_store_backlog_items|m3mon_store_write_errors_total",
        (
            "Bring the database back (`docker compose ps postgres` and its logs) or fix what the log says: "
            "the password (`M3MON_STORAGE_URL`), the role's grants, `m3mon db upgrade -c monitor.yaml`, a "
            "read-only standby (point `storage.url` at the primary).",
            "Nothing to replay by hand: within one evaluation run (15 s) of the database taking writes the "
            "spool is replayed in order and deleted, and the alert resolves.",
            "Keep `storage.buffer_dir` on a volume with room: when the spool cannot be written, writes are "
            "held in memory up to `storage.buffer_max_items`, then dropped with an error log.",
        ),
    ),
}
