"""Healthy baseline and a server restart: the pipeline must stay quiet and consistent."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from monitor.sim.harness import SimHandle
from monitor.store.tables import EvaluationRow, IncidentRow, ProbeResultRow, ScrapeIntervalRow
from tests.e2e.stack import endpoint, request_class, running_stack, wait_until

pytestmark = [pytest.mark.real, pytest.mark.timeout(90)]

SLOS = [
    {"name": "availability", "sli": "availability", "objective": 95},
    {"name": "correctness", "sli": "correctness", "objective": 95},
    {"name": "ttft-server", "sli": "ttft", "threshold": "1s", "objective": 95, "source": "server"},
    {"name": "ttft-probes", "sli": "ttft", "threshold": "2s", "objective": 95},
]


def test_healthy_baseline_fires_nothing_and_meets_every_slo(sim: SimHandle, tmp_path: Path) -> None:
    eps = [endpoint("pool", sim.base_url, ["chat-32k"])]
    with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat", "tool_call"], SLOS)]) as st:
        wait_until(lambda: st.query('m3mon:slo_error_ratio:rate1h{slo="ttft-server"}'), 10,
                   "the server TTFT ratio recorded")  # fmt: skip
        st.wait_quiet("chat-32k")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the whole time, nothing even pending
            assert st.all_prom_alerts() == [], st.all_prom_alerts()
            time.sleep(1)
        assert st.am_alerts("SLOErrorBudgetBurnPage") == []
        failures = st.total("m3mon_probe_total", result="failure")
        successes = st.total("m3mon_probe_total", result="success")
        assert st.stop_monitor() == 0, st.log_text()
    assert failures == 0 and successes >= 20
    assert st.capture.posts == {}, "no webhook should have been sent"
    assert [(i.alertname, i.slo, i.starts_at - st.started) for i in st.rows(IncidentRow)] == []
    assert st.count(ProbeResultRow, ProbeResultRow.ok.is_(False)) == 0
    latest = max(r.evaluated_at for r in st.rows(EvaluationRow))
    final = {r.slo_id: r.status for r in st.rows(EvaluationRow, EvaluationRow.evaluated_at == latest)}
    assert final == {f"chat-32k/{s['name']}": "ok" for s in SLOS}
    assert st.count(ScrapeIntervalRow) >= 10


@pytest.mark.slow  # ~25 s; the real-vLLM tier and the agreement suite's counter-reset scenarios cover resets quickly
def test_server_restart_is_a_counter_reset_not_an_incident(sim: SimHandle, tmp_path: Path) -> None:
    eps = [endpoint("pool", sim.base_url, ["chat-32k"])]
    with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat"], SLOS[:3])]) as st:
        wait_until(lambda: st.query("m3mon:slo_error_ratio:rate1h"), 10, "recorded error ratios")
        st.wait_quiet("chat-32k")
        time.sleep(2)
        sim.set_faults(restart=True)
        restarted = time.time()
        end = time.monotonic() + 10
        while time.monotonic() < end:
            assert [a for a in st.all_prom_alerts() if a["state"] != "inactive"] == []
            time.sleep(1)
        negative = st.query(
            "rate(vllm:request_success_total[5m]) < 0 or rate(vllm:generation_tokens_total[5m]) < 0"
        )
        assert st.stop_monitor() == 0, st.log_text()
    assert negative == []
    sent = [
        (a["labels"]["alertname"], a["labels"].get("slo"), a["status"], a["startsAt"])
        for a in st.capture.alerts("/chat") + st.capture.alerts("/pager")
    ]
    assert sent == [] and st.count(IncidentRow) == 0, (sent, restarted)
    intervals = st.rows(ScrapeIntervalRow)
    resets = [i for i in intervals if i.reset]
    assert len(resets) == 1 and resets[0].end >= restarted - 1.5, [(i.end, i.reset) for i in intervals]
    for i in intervals:
        for value in (
            i.request_rate,
            i.prompt_tokens_per_second,
            i.generation_tokens_per_second,
            i.preemptions,
        ):
            assert value is None or value >= 0, (i.end, i.notes)
        assert i.requests >= 0
    assert st.count(ProbeResultRow, ProbeResultRow.ok.is_(False)) == 0
    statuses = {r.status for r in st.rows(EvaluationRow)}
    assert statuses <= {"ok", "no data"}, statuses
