"""The report's read API over a small constructed week."""

from __future__ import annotations

from monitor.model import Model
from monitor.slo.evaluate import evaluate_counts
from monitor.store import DeploymentFingerprint, Store
from monitor.store import queries as q
from monitor.store.ops import alertmanager_op, deployment_op, probe_op, signals_op
from tests.store.helpers import T0, probe, signals

DAY = 86400.0


def test_report_reads(store: Store, model: Model) -> None:
    ops = [probe_op(model, probe(T0 + i * 600, ttft=0.5 + i * 0.1)) for i in range(10)]
    ops += [
        probe_op(model, probe(T0 + DAY + 5, reason="timeout")),
        probe_op(model, probe(T0 + DAY + 9, reason="timeout", kind="reasoning")),
    ]
    ops += [signals_op(model, "m3-interactive", signals(T0 + k * 15, T0 + (k + 1) * 15)) for k in range(4)]
    ops.append(deployment_op("m3-interactive", DeploymentFingerprint(vllm_version="0.13.0"), T0 + 100))
    alert = {
        "fingerprint": "f1",
        "status": "firing",
        "labels": {"alertname": "A", "class": "agent"},
        "startsAt": "2026-01-01T06:00:00Z",
    }
    ops.append(alertmanager_op({"alerts": [alert]}, T0 + 6 * 3600))
    store.apply(ops)
    store.save_evaluations([evaluate_counts(model.slos[0], T0 + 3600, store.counts)])
    with store.session() as s:
        fails = q.probe_failures(s, T0, T0 + 7 * DAY)
        assert [(f.kind, f.reason, f.count) for f in fails] == [
            ("chat", "timeout", 1),
            ("reasoning", "timeout", 1),
        ]
        assert [i.alertname for i in q.incidents(s, T0, T0 + DAY)] == ["A"]
        assert q.incidents(s, T0, T0 + 3600) == []
        assert [d.vllm_version for d in q.deployment_changes(s, T0, T0 + DAY)] == ["0.13.0"]
        (cap,) = q.capacity(s, T0, T0 + DAY)
        assert (cap.endpoint, cap.intervals, cap.peak_kv_cache_usage, cap.preemptions, cap.peak_waiting) == (
            "m3-interactive",
            4,
            0.83,
            12.0,
            7.0,
        )
        lat = {(d.day, d.metric): d for d in q.daily_latency(s, T0, T0 + 7 * DAY)}
        ttft = lat[("2026-01-01", "ttft")]
        assert ttft.count == 10 and abs(ttft.p50 - 0.95) < 1e-9 and ttft.p99 <= 1.4
        assert len(q.evaluations(s, T0, T0 + DAY)) == 1
