"""Outages: the endpoint refuses connections for a while; the database goes away for a while."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from monitor.store.tables import EvaluationRow, IncidentRow, ProbeResultRow, ScrapeIntervalRow
from tests.e2e.conftest import sim_process
from tests.e2e.servers import free_port
from tests.e2e.stack import STEP, endpoint, request_class, running_stack, wait_until
from tests.support.postgres import PostgresCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(120)]

AVAILABILITY = [{"name": "availability", "sli": "availability", "objective": 95}]


def _page(st: object, state: str = "firing") -> list[dict[str, object]]:
    return st.prom_alerts("SLOErrorBudgetBurnPage", state)  # type: ignore[attr-defined, no-any-return]


def test_endpoint_down_then_back_pages_and_records_the_incident(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    classes = [request_class("chat-32k", ["chat"], AVAILABILITY)]
    eps = [endpoint("pool", url, ["chat-32k"])]
    with sim_process(port, tmp_path / "sim1.log") as first, running_stack(tmp_path, eps, classes) as st:
        time.sleep(2)
        first.terminate()
        first.wait(10)
        down_at = time.time()
        wait_until(lambda: _page(st), 30, "the availability page alert firing in Prometheus")
        wait_until(lambda: st.prom_alerts("VLLMEndpointDown"), 10, "VLLMEndpointDown firing")
        wait_until(lambda: st.am_alerts("SLOErrorBudgetBurnPage"), 10, "the page in Alertmanager")
        wait_until(lambda: [a for a in st.capture.alerts("/pager") if a["status"] == "firing"], 10,
                   "the pager webhook")  # fmt: skip
        with sim_process(port, tmp_path / "sim2.log"):
            up_at = time.time()
            wait_until(lambda: not _page(st), 60, "the page alert to resolve")
            wait_until(lambda: [a for a in st.capture.alerts("/pager") if a["status"] == "resolved"
                                and a["labels"]["alertname"] == "SLOErrorBudgetBurnPage"], 15,
                       "the resolved notice on the pager")  # fmt: skip
            wait_until(lambda: st.count(IncidentRow, IncidentRow.alertname == "SLOErrorBudgetBurnPage",
                                        IncidentRow.status == "resolved"), 15, "the incident resolved")  # fmt: skip
            connect_errors = st.total("m3mon_probe_total", reason="connect_error")
            # /health was down with the endpoint, so "healthy but probes failing" never even went
            # pending, during the outage or after the recovery (issue 23: it paged after recovery)
            ever = st.query(
                f'ALERTS{{alertname="VLLMHealthyButProbesFailing"}}[{int(time.time() - down_at) + 5}s]'
            )
            assert st.stop_monitor() == 0, st.log_text()
    assert connect_errors >= 2
    assert ever == [], ever
    failed = st.rows(ProbeResultRow, ProbeResultRow.ok.is_(False))
    assert {r.reason for r in failed} == {"connect_error"}
    assert all(down_at - 1 <= r.started_at <= up_at + 1 for r in failed)
    (page,) = st.rows(IncidentRow, IncidentRow.alertname == "SLOErrorBudgetBurnPage")
    assert (page.request_class, page.slo, page.severity) == ("chat-32k", "availability", "page")
    assert page.ends_at is not None and 0 < page.ends_at - page.starts_at < time.time() - down_at
    assert down_at <= page.starts_at + 1
    down = st.rows(IncidentRow, IncidentRow.alertname == "VLLMEndpointDown")
    assert down and down[0].labels["endpoint"] == "pool"


@pytest.fixture
def pg_db(postgres_cluster: PostgresCluster) -> Iterator[tuple[PostgresCluster, str]]:
    """A fresh database on the throwaway cluster; the cluster is running again afterwards."""
    name = f"e2e_{int(time.time() * 1000)}"
    admin = create_engine(postgres_cluster.url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as c:
            c.execute(text(f"CREATE DATABASE {name}"))
        yield postgres_cluster, postgres_cluster.url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        if not postgres_cluster.running():
            postgres_cluster.start()
        admin.dispose()


@pytest.mark.slow  # ~21 s; tests/service/test_run_store_away covers a database away in the quick tier
def test_database_outage_buffers_and_replays_without_loss_or_duplicates(
    sim: object, pg_db: tuple[PostgresCluster, str], tmp_path: Path
) -> None:
    cluster, url = pg_db
    slos = [
        *AVAILABILITY,
        {"name": "ttft", "sli": "ttft", "threshold": "1s", "objective": 95, "source": "server"},
    ]
    eps = [endpoint("pool", sim.base_url, ["chat-32k"])]  # type: ignore[attr-defined]
    with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat", "tool_call"], slos)],
                       db_url=url, alerting=False) as st:  # fmt: skip
        time.sleep(3)
        cluster.stop()
        try:
            wait_until(
                lambda: st.total("m3mon_store_backlog_items") > 5, 20, "a backlog while the DB is down"
            )
            time.sleep(6)
            backlog = st.total("m3mon_store_backlog_items")
        finally:
            cluster.start()
        wait_until(lambda: st.total("m3mon_store_backlog_items") == 0, 30, "the backlog replayed")
        time.sleep(2 * STEP)
        produced = st.total("m3mon_probe_total")
        assert st.stop_monitor() == 0, st.log_text()
    assert backlog > 10
    probes = st.rows(ProbeResultRow)
    assert produced <= len(probes) <= produced + 4, "probe results lost or duplicated"
    for kind in ("chat", "tool_call"):
        starts = sorted(p.started_at for p in probes if p.kind == kind)
        assert max(b - a for a, b in itertools.pairwise(starts)) < 2.5, f"a gap in {kind} probe results"
    ends = sorted(i.end for i in st.rows(ScrapeIntervalRow))
    assert len(ends) == len(set(ends)) and max(b - a for a, b in itertools.pairwise(ends)) < 2.5
    for slo_id in ("chat-32k/availability", "chat-32k/ttft"):
        instants = sorted({e.evaluated_at for e in st.rows(EvaluationRow, EvaluationRow.slo_id == slo_id)})
        assert {round(b - a, 6) for a, b in itertools.pairwise(instants)} == {STEP}, slo_id
        rows = st.rows(EvaluationRow, EvaluationRow.slo_id == slo_id)
        assert len(rows) == len(instants), f"duplicate evaluations of {slo_id}"
        names = [r.windows["window"] for r in rows]
        assert all(sorted(n) == sorted(set(n)) == sorted(set(names[0])) for n in names), "duplicate windows"
