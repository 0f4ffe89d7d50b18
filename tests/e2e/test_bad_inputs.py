"""Hostile inputs: broken /metrics pages, hostile model output, and API keys that must not leak."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from monitor.sim.harness import SimHandle, running_simulator
from monitor.store.tables import ProbeResultRow, ScrapeIntervalRow
from tests.e2e.servers import BadMetrics
from tests.e2e.stack import SIM, endpoint, m3mon, request_class, running_stack, wait_until
from tests.support import localhttp

pytestmark = [pytest.mark.real, pytest.mark.timeout(90)]

AVAILABILITY = [{"name": "availability", "sli": "availability", "objective": 95}]
HOSTILE = '<script>alert("m3")</script>'
SECRET = "sk-e2e-7f3a9c1d5b2e8f40aa16"


def test_garbled_huge_and_slow_metrics_pages_are_scrape_errors(sim: SimHandle, tmp_path: Path) -> None:
    with BadMetrics() as bad:
        eps = [endpoint("pool", sim.base_url, ["chat-32k"])]
        eps += [endpoint(n, f"{bad.base_url}/{n}", ["chat-32k"]) for n in ("garbled", "huge", "slow")]
        with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat"], AVAILABILITY)]) as st:
            expected = {"garbled": "garbled", "huge": "too_large", "slow": "timeout"}
            for name, reason in expected.items():
                wait_until(lambda n=name, r=reason: st.total("m3mon_scrape_errors_total", endpoint=n, reason=r),
                           20, f"a {reason} scrape error on {name}")  # fmt: skip
            wait_until(lambda: {a["labels"]["endpoint"] for a in st.prom_alerts("M3MonScrapeFailing")}
                       >= {"garbled", "huge"}, 20, "M3MonScrapeFailing for the broken pages")  # fmt: skip
            wait_until(lambda: st.am_alerts("M3MonScrapeFailing"), 10, "it in Alertmanager")
            errors = {n: st.samples("m3mon_scrape_errors_total", endpoint=n) for n in expected}
            success = {n: st.total("m3mon_scrape_success", endpoint=n) for n in [*expected, "pool"]}
            assert st.stop_monitor() == 0, st.log_text()
    for name, reason in expected.items():
        wrong = [(labels["reason"], v) for labels, v in errors[name] if labels["reason"] != reason and v > 0]
        assert wrong == [], f"{name}: unexpected reasons {wrong}"
    assert success == {"garbled": 0, "huge": 0, "slow": 0, "pool": 1}
    stored = {i.endpoint for i in st.rows(ScrapeIntervalRow)}
    assert stored == {"pool"}, "no interval may be stored from a rejected page"


def _report(st: object, tmp: Path, env: dict[str, str] | None = None) -> Path:
    out = tmp / "report"
    cmd = m3mon("report", "-c", str(st.config), "--since", "1d", "-o", str(out))  # type: ignore[attr-defined]
    proc = subprocess.run(cmd, capture_output=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    return out


def test_hostile_model_output_is_escaped_and_never_a_label(sim: SimHandle, tmp_path: Path) -> None:
    eps = [endpoint("pool", sim.base_url, ["chat-32k"])]
    with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat"], AVAILABILITY)]) as st:
        sim.set_faults(wrong_model=HOSTILE)
        wait_until(lambda: st.total("m3mon_probe_total", reason="wrong_model") >= 3, 20, "wrong_model probes")
        wait_until(lambda: st.query('m3mon_probe_total{reason="wrong_model"}'), 10, "Prometheus has them")
        series = localhttp.get(
            f"{st.prometheus}/api/v1/series", params={"match[]": '{job=~".+"}'}, timeout=10
        )
        exported = st.metrics()
        assert st.stop_monitor() == 0, st.log_text()
    assert series.status_code == 200 and series.json()["data"]
    assert all("<" not in v for labels in series.json()["data"] for v in labels.values())
    assert "<script" not in exported
    stored = st.rows(ProbeResultRow, ProbeResultRow.reason == "wrong_model")
    assert stored and HOSTILE in stored[0].detail, "the store keeps the evidence verbatim"
    html = (_report(st, tmp_path) / "report.html").read_text()
    assert "<script" not in html
    assert "&lt;script&gt;" in html, "the hostile detail is shown, escaped"


def test_api_key_is_used_but_never_written_anywhere(tmp_path: Path) -> None:
    env = {"E2E_M3_KEY": SECRET, "PATH": "/usr/bin:/bin"}
    with running_simulator(**SIM, api_key=SECRET) as sim:
        assert localhttp.post(f"{sim.base_url}/v1/chat/completions", json={}, timeout=5).status_code == 401
        eps = [endpoint("pool", sim.base_url, ["chat-32k"], api_key_env="E2E_M3_KEY")]
        with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat", "tool_call"], AVAILABILITY)],
                           alerting=False, env=env) as st:  # fmt: skip
            wait_until(lambda: st.total("m3mon_probe_total", result="success") >= 6, 20, "successful probes")
            time.sleep(2)
            exported = st.metrics()
            assert st.stop_monitor() == 0, st.log_text()
    assert st.count(ProbeResultRow, ProbeResultRow.ok.is_(False)) == 0
    report = _report(st, tmp_path, {**env, "HOME": str(tmp_path)})
    places = {
        "exporter": exported.encode(),
        "log": st.log.read_bytes(),
        "db": (tmp_path / "m3mon.db").read_bytes(),
    }
    places |= {p.name: p.read_bytes() for p in report.iterdir()}
    places |= {str(p): p.read_bytes() for p in (tmp_path / "spool").rglob("*") if p.is_file()}
    leaks = [name for name, data in places.items() if SECRET.encode() in data]
    assert leaks == []
    assert len(places) >= 7
