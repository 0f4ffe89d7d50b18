"""``m3mon run`` as a real process against the simulator: burn shows up, SIGTERM and kill -9 are safe."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from monitor.model import load_model
from monitor.sim.harness import SimHandle, running_simulator
from monitor.store import Store
from monitor.store.evaluations import EvaluationRepo
from monitor.store.tables import IncidentRow, ProbeResultRow
from tests.support import localhttp

pytestmark = pytest.mark.timeout(120)

STEP = 2.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(tmp: Path, sim_url: str, port: int) -> Path:
    path = tmp / "monitor.yaml"
    path.write_text(
        f"""version: m3mon/v1
endpoints:
  - name: pool
    base_url: {sim_url}
    model: MiniMaxAI/MiniMax-M3
    classes: [chat-32k]
    scrape_interval: 1s
request_classes:
  - name: chat-32k
    max_context_tokens: 32768
    probes: [chat, tool_call]
    probe: {{interval: 1s, jitter: 0.1s, timeout: 10s}}
    slos:
      - {{name: availability, sli: availability, objective: 99}}
      - {{name: ttft-p95, sli: ttft, threshold: 1s, objective: 95, source: server}}
storage: {{url: "sqlite:///{tmp / "m3mon.db"}", buffer_dir: "{tmp / "spool"}"}}
exporter: {{listen: "127.0.0.1:{port}"}}
"""
    )
    return path


def _m3mon(*args: str) -> list[str]:
    return [sys.executable, "-m", "monitor", *args]


@pytest.fixture
def sim() -> Iterator[SimHandle]:
    with running_simulator(decode_itl=0.003, answer_tokens=(8, 16), seed=7) as handle:
        yield handle


def _migrated(tmp: Path, sim: SimHandle) -> tuple[Path, int]:
    """The config of a monitor of ``sim`` on a free port, its store migrated."""
    port = _free_port()
    cfg = _config(tmp, sim.base_url, port)
    subprocess.run(_m3mon("db", "upgrade", "-c", str(cfg)), check=True, timeout=60)
    return cfg, port


def _start(cfg: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(_m3mon("run", "-c", str(cfg), "--evaluation-step", str(STEP), "--no-report"),
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip


def _wait_http(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if localhttp.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} never answered")


def _stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


def test_run_measures_a_fault_records_incidents_and_stops_on_sigterm(sim: SimHandle, tmp_path: Path) -> None:
    cfg, port = _migrated(tmp_path, sim)
    proc = _start(cfg, tmp_path / "run.log")
    try:
        _wait_http(f"http://127.0.0.1:{port}/healthz", time.monotonic() + 20)
        time.sleep(5)
        sim.set_faults(error_rate=1.0, error_status=500)
        time.sleep(6)
        payload = {"version": "4", "status": "firing", "alerts": [{
            "status": "firing", "fingerprint": "abc123", "startsAt": "2026-11-29T10:00:00.123456789Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "labels": {"alertname": "M3SLOBurnPage", "class": "chat-32k", "slo": "availability", "severity": "page"},
            "annotations": {"summary": "<b>burning</b>"}}]}  # fmt: skip
        r = localhttp.post(f"http://127.0.0.1:{port}/alertmanager", json=payload, timeout=5)
        assert r.status_code == 200, r.text
        bad = localhttp.post(f"http://127.0.0.1:{port}/alertmanager", content=b"{not json", timeout=5)
        assert bad.status_code == 400
        metrics = localhttp.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        code = _stop(proc)
    assert code == 0, (tmp_path / "run.log").read_text()
    assert 'm3mon_scrape_success{endpoint="pool"} 1.0' in metrics
    assert 'reason="http_status"' in metrics and 'result="failure"' in metrics
    assert "m3mon_slo_burn_rate{" in metrics
    # the drift guard judged the simulator's page (a vLLM 0.33 surface) against what the rules read
    served = 'family="vllm:time_to_first_token_seconds",replacement="",status="served"} 1.0'
    assert f'm3mon_metric_family_served{{endpoint="pool",{served}' in metrics
    assert 'status="absent"' not in metrics

    store = Store(load_model(cfg).storage.url)
    try:
        with store.session() as s:
            evaluations = EvaluationRepo(s).between(0, time.time() + 60, "chat-32k/availability")
            incidents = s.scalars(select(IncidentRow)).all()
            failed = s.scalar(
                select(func.count()).select_from(ProbeResultRow).where(ProbeResultRow.reason == "http_status")
            )
        assert failed and failed >= 2
        five = [e.window("5m") for e in evaluations]
        assert any(w is not None and w.burn_rate is not None and w.burn_rate > 1 for w in five)
        assert [(i.alertname, i.request_class, i.status) for i in incidents] == [
            ("M3SLOBurnPage", "chat-32k", "firing")
        ]
    finally:
        store.close()


def test_kill_9_and_restart_leave_no_duplicate_and_no_missing_evaluation(
    sim: SimHandle, tmp_path: Path
) -> None:
    cfg, port = _migrated(tmp_path, sim)
    proc = _start(cfg, tmp_path / "run.log")
    _wait_http(f"http://127.0.0.1:{port}/healthz", time.monotonic() + 20)
    time.sleep(6)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    time.sleep(2 * STEP + 0.5)  # steps missed while the monitor is down are backfilled
    proc = _start(cfg, tmp_path / "run.log")
    try:
        _wait_http(f"http://127.0.0.1:{port}/healthz", time.monotonic() + 20)
        time.sleep(6)
    finally:
        assert _stop(proc) == 0
    store = Store(load_model(cfg).storage.url)
    try:
        with store.session() as s:
            evaluations = EvaluationRepo(s).between(0, time.time() + 60, "chat-32k/availability")
    finally:
        store.close()
    instants = [e.evaluated_at for e in evaluations]
    assert len(instants) == len(set(instants)), "duplicate evaluations"
    gaps = {round(b - a, 6) for a, b in itertools.pairwise(instants)}
    assert gaps == {STEP}, f"missing evaluation steps: {json.dumps(sorted(gaps))}"
    assert len(instants) >= 6


def test_ctrl_c_stops_cleanly_with_exit_130(sim: SimHandle, tmp_path: Path) -> None:
    """SIGINT is an interruption (README: 130), SIGTERM a supervisor's clean stop (0, above); both
    take the same shutdown path (before: Ctrl-C exited 0)."""
    cfg, port = _migrated(tmp_path, sim)
    proc = _start(cfg, tmp_path / "run.log")
    try:
        _wait_http(f"http://127.0.0.1:{port}/healthz", time.monotonic() + 20)
    finally:
        code = _stop(proc, signal.SIGINT)
    log = (tmp_path / "run.log").read_text()
    assert code == 130, log
    assert "Traceback" not in log and "ERROR" not in log
