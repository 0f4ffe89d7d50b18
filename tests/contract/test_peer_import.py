"""``m3mon contract --import FILE --class C`` through the real CLI, against the real simulator
(docs/contract.md, *Peer results as evidence*): files written by the real tools become replay runs
the contract counts, under the replay's evidence rules; bad files change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.sim.harness import running_simulator
from monitor.store.fingerprint import DeploymentFingerprint
from monitor.store.replays import StoredRun, runs
from monitor.store.repos import DeploymentRepo
from monitor.store.store import Store
from tests.contract.peer_files import retargeted
from tests.contract.test_contract_sim import SETTINGS, _config, m3mon
from tests.contract.test_peer_formats import PEERS
from tests.e2e.servers import free_port

DETAILED = str(PEERS / "vllm-bench-rate4-detailed.json")
AIPERF = "aiperf-rate4-profile_export_aiperf.json"


def _stored(cfg: Path) -> list[StoredRun]:
    db = Store(f"sqlite:///{cfg.parent}/m3mon.db")
    try:
        with db.session() as s:
            return runs(s)
    finally:
        db.close()


def test_imported_runs_are_evidence_in_the_contract(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_simulator(**SETTINGS) as sim:  # type: ignore[arg-type]
        cfg = str(_config(tmp_path, sim.base_url))
        status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", DETAILED)
        assert status == 0, out + err
        assert out.startswith(
            "imported run 1: vllm bench serve at rate 4/s, 24 completed, 0 failed, per-request values: SLOs hold\n"
        )
        assert "* **Warm capacity**: SLOs hold up to 4 req/s (rate, 1 run(s))" in out
        assert "vLLM: 0.33.0" in out and "not counted" not in out  # the simulator's fingerprint, now
        aiperf = retargeted(AIPERF, sim.base_url, tmp_path)
        status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", aiperf)
        assert (
            status == 0
            and "imported run 2: AIPerf at rate 4/s, 22 completed, 0 failed, quantiles only" in out
        )
        status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", DETAILED)
    assert status == 2 and err.strip() == (
        f"m3mon contract: {DETAILED}: already imported as run 1 (sim, small, same start); nothing stored"
    )
    first, second = sorted(_stored(Path(cfg)), key=lambda r: r.id)  # stored oldest start first
    assert first.fingerprint_digest is not None and first.fingerprint_digest == second.fingerprint_digest
    clauses = {c["slo"]: c for c in second.summary["clauses"]}
    assert (
        clauses["ttft-p95"]["holds"] is True and clauses["ttft-p95"]["good"] is None
    )  # bounded, not counted
    assert clauses["itl-p95"]["holds"] is None and "no itl figure" in clauses["itl-p95"]["basis"]
    assert second.summary["source"]["sha256"] and second.summary["source"]["tool"] == "AIPerf"


def test_an_unreachable_endpoint_at_import_stores_a_failed_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = str(_config(tmp_path, f"http://127.0.0.1:{free_port()}"))
    status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", DETAILED)
    why = "the deployment fingerprint was not observable at import time (/metrics of sim could not be read)"
    assert status == 1 and err == f"m3mon contract: imported run 1 is not evidence: {why}\n"
    assert f"* note: replay run 1 (rate 4) not counted: {why}" in out
    assert "Warm capacity**: not established" in out
    (run,) = _stored(Path(cfg))
    assert run.not_evidence == why and run.fingerprint_digest is None


def test_a_run_without_completed_requests_is_no_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_simulator(**SETTINGS) as sim:  # type: ignore[arg-type]
        cfg = str(_config(tmp_path, sim.base_url))
        failed = str(PEERS / "vllm-bench-all-failed.json")
        status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", failed)
    assert status == 1 and "imported run 1 is not evidence: no request completed (8 failed)" in err
    assert "replay run 1 (rate 4) not counted: no request completed (8 failed)" in out


def test_a_deployment_change_since_the_run_makes_it_no_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = json.loads((PEERS / "guidellm-rate4.json").read_text())["benchmarks"][0]["start_time"]
    with running_simulator(**SETTINGS) as sim:  # type: ignore[arg-type]
        cfg = _config(tmp_path, sim.base_url)
        db = Store(f"sqlite:///{tmp_path}/m3mon.db")
        try:
            with db.session() as s:  # the monitor saw another deployment when the run started
                DeploymentRepo(s).observe("sim", DeploymentFingerprint(vllm_version="0.32.0"), started - 60)
        finally:
            db.close()
        status, _, err = m3mon(capsys, "contract", "-c", str(cfg), "--class", "small", "--import",
                               retargeted("guidellm-rate4.json", sim.base_url, tmp_path))  # fmt: skip
    assert status == 1 and "not evidence: the deployment changed after the run:" in err


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("completed: 3\n", "not JSON (Expecting value at line 1)"),
        ('{"benchmarks": []}', "not a known benchmark result (vllm bench serve --save-result JSON, GuideLLM"),
        (
            '{"date": "20261202-154050", "backend": "openai", "completed": "24", "failed": 0, "duration": 6.4}',
            "field 'completed' is '24', expected a number",
        ),
        (
            '{"date": "yesterday", "backend": "openai", "completed": 24, "failed": 0, "duration": 6.4, '
            '"request_rate": 4, "request_throughput": 3.7, "total_input_tokens": 1}',
            "field 'date' is 'yesterday', expected YYYYmmdd-HHMMSS",
        ),
    ],
)
def test_a_bad_file_is_one_line_exit_2_nothing_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str
) -> None:
    cfg = str(_config(tmp_path, f"http://127.0.0.1:{free_port()}"))
    bad = tmp_path / "result.json"
    bad.write_text(content)
    status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", str(bad))
    assert status == 2 and out == "" and err.startswith(f"m3mon contract: {bad}: {says}")
    assert err.count("\n") == 1 and _stored(Path(cfg)) == []
    status, _, err = m3mon(capsys, "contract", "-c", cfg, "--import", DETAILED)
    assert status == 2 and err == (
        "m3mon contract: --import needs exactly one --class: the class whose traffic the file measured\n"
    )
