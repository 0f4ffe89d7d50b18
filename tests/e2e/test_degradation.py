"""Degradations short of an outage: brown-out, /health lying, bad tool calls, KV-cache pressure."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import httpx
import pytest

from monitor.sim.harness import SimHandle
from monitor.store.tables import IncidentRow, ProbeResultRow, ScrapeIntervalRow
from tests.e2e.stack import MODEL, endpoint, request_class, running_stack, wait_until
from tests.support import localhttp

pytestmark = [pytest.mark.real, pytest.mark.timeout(90)]

AVAILABILITY = {"name": "availability", "sli": "availability", "objective": 95}


def _firing_slos(st: object, alert: str = "SLOErrorBudgetBurnPage") -> set[str]:
    return {a["labels"]["slo"] for a in st.prom_alerts(alert)}  # type: ignore[attr-defined]


ROW = re.compile(r"(\w+) ([0-9.]+|\+Inf)x, (\w+) ([0-9.]+|\+Inf)x \(over ([0-9.]+)x\)")


def _delivered_page(st: object, slo: str) -> dict[str, str] | None:
    """The annotations of the first burn page of ``slo`` the pager webhook received."""
    pages = [a for a in st.capture.alerts("/pager")  # type: ignore[attr-defined]
             if a["labels"]["alertname"] == "SLOErrorBudgetBurnPage" and a["labels"]["slo"] == slo]  # fmt: skip
    return dict(pages[0]["annotations"]) if pages else None


def _check_says_what_burned(annotations: dict[str, str], endpoint: str, request_class: str) -> None:
    """The page's own numbers justify it: some row burns above its factor in both windows."""
    rows = ROW.findall(annotations["burn_rates"])
    assert len(rows) == 2, annotations["burn_rates"]
    assert any(float(a) > float(f) and float(b) > float(f) for _, a, _, b, f in rows), annotations
    assert re.fullmatch(r"-?[0-9]+\.[0-9]% of the 30d error budget left", annotations["budget_left"])
    assert re.fullmatch(
        r"at the last 1h's burn the rest of the budget lasts [0-9.]+ h", annotations["exhaustion"]
    )
    assert re.fullmatch(rf"bad events over the last 1h: {endpoint} [1-9][0-9]*", annotations["endpoints"])
    assert annotations["dashboard"].endswith(f"/d/m3mon-slo?var-class={request_class}")


def _mean(intervals: list[ScrapeIntervalRow], part: str) -> float:
    hists = [i.histograms[part] for i in intervals if part in i.histograms]
    count = sum(h["count"] for h in hists)
    return sum(h["sum"] for h in hists) / count if count else 0.0


def test_prefill_brownout_burns_ttft_and_the_breakdown_shows_prefill(sim: SimHandle, tmp_path: Path) -> None:
    slos = [
        AVAILABILITY,
        {"name": "ttft", "sli": "ttft", "threshold": "0.1s", "objective": 95, "source": "server"},
    ]
    eps = [endpoint("pool", sim.base_url, ["chat-32k"])]
    with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat"], slos)]) as st:
        time.sleep(2)
        sim.set_faults(brownout_prefill_factor=400)
        started = time.time()
        wait_until(lambda: "ttft" in _firing_slos(st), 30, "the TTFT page alert")
        wait_until(lambda: st.count(IncidentRow, IncidentRow.slo == "ttft"), 10, "the incident recorded")
        page = wait_until(lambda: _delivered_page(st, "ttft"), 15, "the TTFT page at the pager webhook")
        assert "availability" not in _firing_slos(st)
        time.sleep(3)
        assert st.stop_monitor() == 0, st.log_text()
    intervals = st.rows(ScrapeIntervalRow)
    before = [i for i in intervals if i.end < started]
    during = [i for i in intervals if i.end > started + 1.5]
    assert before and during
    assert _mean(during, "prefill") > max(0.1, 5 * _mean(before, "prefill")), (
        _mean(before, "prefill"),
        _mean(during, "prefill"),
    )
    assert _mean(during, "queue") < 0.05, "the time went to prefill, not the queue"
    assert st.count(ProbeResultRow, ProbeResultRow.ok.is_(False)) == 0
    _check_says_what_burned(page, "pool", "chat-32k")


def test_health_ok_while_completions_fail_is_caught(sim: SimHandle, tmp_path: Path) -> None:
    eps = [endpoint("pool", sim.base_url, ["chat-32k"])]
    with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat"], [AVAILABILITY])]) as st:
        sim.set_faults(health_ok_completions_fail=True)
        wait_until(lambda: st.prom_alerts("VLLMHealthyButProbesFailing"), 30, "VLLMHealthyButProbesFailing")
        wait_until(lambda: st.am_alerts("VLLMHealthyButProbesFailing"), 10, "it in Alertmanager")
        wait_until(lambda: "availability" in _firing_slos(st), 10, "the availability page")
        assert localhttp.get(f"{sim.base_url}/health", timeout=5).status_code == 200
        health = st.total("m3mon_endpoint_health_up", endpoint="pool")
        failed = st.total("m3mon_probe_total", reason="http_status")
        wait_until(lambda: st.count(IncidentRow, IncidentRow.alertname == "VLLMHealthyButProbesFailing"), 10,
                   "the incident recorded")  # fmt: skip
        assert st.stop_monitor() == 0, st.log_text()
    assert health == 1 and failed >= 3
    assert {r.reason for r in st.rows(ProbeResultRow, ProbeResultRow.ok.is_(False))} == {"http_status"}
    (alert,) = st.capture.alerts("/pager")[:1]
    assert alert["labels"]["alertname"] in ("VLLMHealthyButProbesFailing", "SLOErrorBudgetBurnPage")


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ({"malformed_tool_call": "invalid_json"}, "malformed_tool_call"),
        pytest.param({"parser_leak": True}, "parser_leak", marks=pytest.mark.slow),  # same path as above
    ],
)
def test_bad_tool_calls_burn_correctness_not_availability(
    sim: SimHandle, tmp_path: Path, fault: dict[str, object], reason: str
) -> None:
    slos = [AVAILABILITY, {"name": "correctness", "sli": "correctness", "objective": 95}]
    eps = [endpoint("pool", sim.base_url, ["agent"])]
    with running_stack(tmp_path, eps, [request_class("agent", ["chat", "tool_call"], slos)]) as st:
        sim.set_faults(**fault)
        wait_until(lambda: "correctness" in _firing_slos(st), 30, "the correctness page alert")
        # the page may fire on the first bad answers (every series exists from 0): wait for a few
        wait_until(lambda: st.total("m3mon_probe_total", kind="tool_call", reason=reason) >= 2, 15,
                   f"tool_call probes failing with {reason}")  # fmt: skip
        assert "availability" not in _firing_slos(st) | _firing_slos(st, "SLOErrorBudgetBurnTicket")
        assert st.stop_monitor() == 0, st.log_text()
    failed = st.rows(ProbeResultRow, ProbeResultRow.ok.is_(False))
    assert {(r.kind, r.reason) for r in failed if r.kind == "tool_call"} == {("tool_call", reason)}
    assert all(r.reason == reason for r in failed)


def _load(base_url: str, stop: threading.Event) -> None:
    body = {"model": MODEL, "max_tokens": 400, "ignore_eos": True, "stream": True,
            "messages": [{"role": "user", "content": "Write a long story about the sea. " * 20}]}  # fmt: skip
    with httpx.Client(timeout=30) as c:
        while not stop.is_set():
            try:
                with c.stream("POST", f"{base_url}/v1/chat/completions", json=body) as r:
                    for _ in r.iter_bytes():
                        pass
            except httpx.HTTPError:
                time.sleep(0.1)


@pytest.mark.slow  # ~22 s; tests/generate/test_detection_operational fires VLLMPreemptions in promtool
def test_kv_pressure_preempts_and_the_saturation_alert_fires(sim: SimHandle, tmp_path: Path) -> None:
    eps = [endpoint("pool", sim.base_url, ["chat-32k"])]
    with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat"], [AVAILABILITY])]) as st:
        sim.set_faults(kv_pressure=12)
        stop = threading.Event()
        threads = [threading.Thread(target=_load, args=(sim.base_url, stop)) for _ in range(6)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: st.query("increase(vllm:num_preemptions_total[1m]) > 0"), 30, "preemptions")
            wait_until(lambda: st.prom_alerts("VLLMPreemptions"), 30, "VLLMPreemptions firing")
            wait_until(lambda: st.am_alerts("VLLMPreemptions"), 10, "it in Alertmanager")
        finally:
            stop.set()
            for t in threads:
                t.join(40)
        wait_until(lambda: [a for a in st.capture.alerts("/chat") if a["labels"]["alertname"] == "VLLMPreemptions"],
                   10, "the ticket webhook")  # fmt: skip
        assert st.stop_monitor() == 0, st.log_text()
    assert sum(i.preemptions or 0 for i in st.rows(ScrapeIntervalRow)) > 0
    assert max(i.kv_cache_usage or 0 for i in st.rows(ScrapeIntervalRow)) > 0.5
