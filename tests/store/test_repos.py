"""Round trips of every repository, idempotent upserts, deployment history, incidents."""

from __future__ import annotations

from sqlalchemy import func, select

from monitor.model import Model
from monitor.slo.evaluate import evaluate_counts
from monitor.store import DeploymentFingerprint, Store
from monitor.store.counts import EventCounts
from monitor.store.ops import alertmanager_op, deployment_op, endpoints_op, probe_op, signals_op
from monitor.store.repos import DeploymentRepo, EndpointRepo
from monitor.store.tables import EventSliceRow, IncidentRow, ProbeResultRow, ScrapeIntervalRow
from tests.store.helpers import T0, probe, signals


def _count(store: Store, table: type) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(table)) or 0)


def test_probe_result_round_trip_and_idempotent(store: Store, model: Model) -> None:
    op = probe_op(model, probe(T0, reason="timeout"))
    store.apply([op, op])
    store.apply([op])
    with store.session() as s:
        rows = list(s.scalars(select(ProbeResultRow)))
        assert len(rows) == 1
        r = rows[0]
        assert (r.endpoint, r.request_class, r.kind, r.started_at) == (
            "m3-interactive",
            "interactive-32k",
            "chat",
            T0,
        )
        assert not r.ok and r.reason == "timeout" and r.ttft == 0.8 and r.prompt_tokens == 100
        assert r.extra["extra"] == {"cold_ttft": 1.5, "nan": None} and r.log == ["sent", "done"]
        # interactive-32k has 3 probe-sourced SLOs: availability, correctness (skipped: no answer), ttft-p99
        slices = {x.slo_id: (x.good, x.total) for x in s.scalars(select(EventSliceRow))}
    assert slices == {"interactive-32k/availability": (0.0, 1.0)}


def test_scrape_interval_round_trip(store: Store, model: Model) -> None:
    op = signals_op(model, "m3-interactive", signals(T0, T0 + 15))
    store.apply([op])
    store.apply([op])
    with store.session() as s:
        r = s.scalars(select(ScrapeIntervalRow)).one()
        assert (r.start, r.end, r.requests, r.waiting, r.kv_cache_usage) == (T0, T0 + 15, 100, 7, 0.83)
        assert r.histograms["ttft"]["edges"][-1] == "+Inf" and r.finished == {"stop": 90, "error": 10}
        assert r.request_rate is not None and abs(r.request_rate - 100 / 15) < 1e-9
        got = EventCounts(s).counts("interactive-32k/ttft-p95", T0, T0 + 15)
    assert got == (95.0, 100.0)  # 2.5s is a bucket edge
    assert _count(store, EventSliceRow) == 2  # ttft-p95 and itl-p95 (interactive-32k's server SLOs)


def test_evaluation_upsert_is_idempotent(store: Store, model: Model) -> None:
    slo = model.request_class("interactive-32k").slos[0]
    store.apply([probe_op(model, probe(T0 + 10))])
    ev = evaluate_counts(slo, T0 + 60, store.counts)
    assert store.save_evaluations([ev]) == 1
    store.save_evaluations([ev, ev])
    with store.session() as s:
        from monitor.store.evaluations import EvaluationRepo

        repo = EvaluationRepo(s)
        assert repo.count() == 1  # one row per (SLO, instant), every window in it
        assert repo.last_evaluated_at(slo.id) == T0 + 60
        back = repo.latest()
    assert back == [ev]


def test_deployments_new_row_only_on_change(store: Store, model: Model) -> None:
    fp = DeploymentFingerprint(
        vllm_version="0.13.0", max_model_len=32768, block_size=128, prefix_caching=True
    )
    fp = fp.with_config(model.endpoints[0].deployment)
    changed = DeploymentFingerprint(vllm_version="0.14.0", max_model_len=32768, block_size=128)
    ops = [deployment_op("m3-interactive", fp, T0 + i) for i in range(3)]
    ops.append(deployment_op("m3-interactive", changed, T0 + 100))
    ops.append(deployment_op("m3-interactive", changed, T0 + 160))
    store.apply(ops)
    store.apply(ops)  # replayed: nothing new
    with store.session() as s:
        rows = DeploymentRepo(s).history("m3-interactive")
        assert [(r.vllm_version, r.first_seen, r.last_seen) for r in rows] == [
            ("0.13.0", T0, T0 + 2),
            ("0.14.0", T0 + 100, T0 + 160),
        ]
        assert rows[0].tensor_parallel_size == 8 and rows[0].image_digest == "vllm/vllm-openai:minimax-m3"


def test_endpoints_sync(store: Store, model: Model) -> None:
    store.apply([endpoints_op(model.endpoints), endpoints_op(model.endpoints)])
    with store.session() as s:
        names = [(e.name, e.backend) for e in EndpointRepo(s).all()]
    assert names == [("m3-extended", "vllm"), ("m3-interactive", "vllm"), ("m3-repo", "vllm")]


def test_incidents_firing_then_resolved(store: Store) -> None:
    alert = {
        "fingerprint": "abc123",
        "status": "firing",
        "labels": {
            "alertname": "M3SLOBurn",
            "class": "interactive-32k",
            "slo": "availability",
            "severity": "page",
        },
        "annotations": {"summary": "burning"},
        "startsAt": "2026-01-01T00:00:00.123456789Z",
        "endsAt": "0001-01-01T00:00:00Z",
    }
    store.apply([alertmanager_op({"alerts": [alert]}, T0 + 5)])
    resolved = dict(alert, status="resolved", endsAt="2026-01-01T01:00:00Z")
    store.apply([alertmanager_op({"alerts": [resolved]}, T0 + 3600)])
    with store.session() as s:
        r = s.scalars(select(IncidentRow)).one()
        assert (r.status, r.alertname, r.request_class, r.slo, r.severity) == (
            "resolved",
            "M3SLOBurn",
            "interactive-32k",
            "availability",
            "page",
        )
        assert abs(r.starts_at - (T0 + 0.123456)) < 1e-6 and r.ends_at == T0 + 3600
