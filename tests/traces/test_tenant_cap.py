"""A client inventing 10,000 tenant ids grows neither the series count nor the store.

``m3mon run`` receives real-traffic spans (OTLP protobuf, as vLLM exports them) naming 10,000
distinct tenants once each, one tenant named in ``traffic.tenants`` and one busy unnamed tenant.
The cap is ``traffic.tenants`` + ``top_tenants`` + 1 (``other``) tenant label values
(docs/traces.md, "Tenants and priorities"). Read from the exporter and from a real Prometheus
scraping it, ``m3mon_traffic_requests_total`` stays within the cap's series; the busy tenant gets
a label of its own, the invented ids are folded into ``other`` and counted as such; the store
holds only the configured SLOs' slices.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from monitor.store.tables import EventSliceRow
from tests.service.test_run import _free_port, _m3mon, _stop, _wait_http
from tests.support import localhttp
from tests.support.prometheus import query, running_prometheus, wait_for
from tests.traces.otlp_bodies import request, span

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(120)]  # ~35 s

INVENTED = 10_000
BUSY = 60  # requests of the busy unnamed tenant: above min_tenant_requests
TOP = 2
#: named "acme" + TOP + "other"; two bands; good and bad; one endpoint-class pair
CAP_LABELS = 1 + TOP + 1
CAP_SERIES = CAP_LABELS * 2 * 2


def _config(tmp: Path, port: int) -> Path:
    path = tmp / "monitor.yaml"
    path.write_text(f"""version: m3mon/v1
endpoints:
  - {{name: pool, base_url: "http://127.0.0.1:9", model: MiniMaxAI/MiniMax-M3, classes: [chat-32k],
     span_service_name: gateway}}
request_classes:
  - name: chat-32k
    max_context_tokens: 32768
    probes: [chat]
    probe: {{interval: 1h}}
    slos:
      - {{name: e2e, sli: e2e, threshold: 2s, objective: 99}}
      - {{name: goodput, sli: goodput, objective: 99, source: traffic, tenants: [acme, other]}}
      - {{name: goodput-all, sli: goodput, objective: 99, source: traffic}}
traffic:
  tenants: [acme]
  top_tenants: {TOP}
  min_tenant_requests: 50
  priority_bands: [{{name: high, up_to: -1}}, {{name: normal}}]
storage: {{url: "sqlite:///{tmp / "m3mon.db"}", buffer_dir: "{tmp / "spool"}"}}
exporter: {{listen: "127.0.0.1:{port}"}}
""")
    return path


def _bodies() -> list[bytes]:
    """Batches of 500 spans: the invented ids once each, acme and the busy tenant among them."""
    tenants = [f"invented-{i:05d}" for i in range(INVENTED)] + ["acme"] * 20 + ["busy"] * BUSY
    spans = []
    for i, tenant in enumerate(tenants):
        attrs = {"tenant.id": tenant, "vllm.request.priority": -1 if i % 3 == 0 else 0,
                 "gen_ai.usage.prompt_tokens": 100, "gen_ai.usage.completion_tokens": 20,
                 "gen_ai.latency.time_to_first_token": 0.2, "gen_ai.latency.e2e": 1.0}  # fmt: skip
        spans.append(
            span(trace_id=(i + 1).to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"), attributes=attrs)
        )
    return [
        request(*spans[k : k + 500], service="gateway").SerializeToString() for k in range(0, len(spans), 500)
    ]


def _traffic_series(metrics: str) -> list[dict[str, str]]:
    return [s.labels for f in text_string_to_metric_families(metrics) for s in f.samples
            if s.name == "m3mon_traffic_requests_total"]  # fmt: skip


def _value(metrics: str, name: str) -> float:
    return sum(s.value for f in text_string_to_metric_families(metrics) for s in f.samples if s.name == name)


def test_invented_tenant_ids_stay_under_the_cap(tmp_path: Path) -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    config = _config(tmp_path, port)
    with (tmp_path / "monitor.log").open("ab") as log:
        proc = subprocess.Popen(_m3mon("run", "-c", str(config), "--upgrade", "--no-report"),
                                stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        _wait_http(f"{base}/healthz", time.monotonic() + 30)
        scrape = {"global": {"scrape_interval": "1s"},
                  "scrape_configs": [{"job_name": "m3mon", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}]}  # fmt: skip
        with running_prometheus(scrape, tmp_path) as prom:
            for body in _bodies():
                r = localhttp.post(f"{base}/v1/traces", content=body,
                               headers={"content-type": "application/x-protobuf"}, timeout=30)  # fmt: skip
                assert r.status_code == 200, r.text
            metrics = localhttp.get(f"{base}/metrics", timeout=10).text
            total = INVENTED + 20 + BUSY
            counted = 'sum(m3mon_traffic_requests_total{job="m3mon"})'
            wait_for(lambda: query(prom, f"{counted} == {total}"), 20, "Prometheus to scrape every request")
            in_prometheus = query(prom, 'count(m3mon_traffic_requests_total{job="m3mon"})')
            tenants_in_prometheus = query(
                prom, 'count(count by (tenant) (m3mon_traffic_requests_total{job="m3mon"}))'
            )
        assert _stop(proc) == 0
    finally:
        _stop(proc)
    series = _traffic_series(metrics)
    assert sum(1 for _ in series) <= CAP_SERIES
    assert {s["tenant"] for s in series} == {"acme", "busy", "other"}
    assert float(in_prometheus[0]["value"][1]) <= CAP_SERIES
    assert float(tenants_in_prometheus[0]["value"][1]) <= CAP_LABELS
    assert _value(metrics, "m3mon_traffic_tenant_cap") == CAP_LABELS
    assert _value(metrics, "m3mon_traffic_tenant_labels") == 3  # acme, busy, other
    assert _value(metrics, "m3mon_traffic_tenants_folded") == INVENTED + 1  # and busy, before it had a label
    other = sum(s.value for f in text_string_to_metric_families(metrics) for s in f.samples
                if s.name == "m3mon_traffic_requests_total" and s.labels["tenant"] == "other")  # fmt: skip
    assert _value(metrics, "m3mon_traffic_folded_requests_total") == other
    engine = create_engine(f"sqlite:///{tmp_path / 'm3mon.db'}")
    with Session(engine) as s:
        slos = set(
            s.scalars(select(EventSliceRow.slo_id).where(EventSliceRow.origin == "traffic").distinct())
        )
        rows = s.scalar(
            select(func.count()).select_from(EventSliceRow).where(EventSliceRow.origin == "traffic")
        )
    engine.dispose()
    assert slos == {"chat-32k/goodput.acme", "chat-32k/goodput.other", "chat-32k/goodput-all"}
    assert rows is not None and rows <= 3 * len(
        _bodies()
    )  # one slice per SLO and batch, whatever the tenants
