"""``m3mon contract`` shows every stored run, ``m3mon replay``'s and imported peer results, side by
side with their percentiles (issue 26, *Done when*; docs/contract.md, *Runs*): the numbers are
the runs' own, checked against an oracle computed here from the peer file's per-request values
and the replay's stored per-request values (nearest rank)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from monitor.sim.harness import running_simulator
from monitor.store.replays import StoredRun, run_by_id
from monitor.store.store import Store
from tests.contract.test_contract_sim import SETTINGS, _config, m3mon
from tests.contract.test_peer_formats import PEERS

DETAILED = PEERS / "vllm-bench-rate4-detailed.json"
HEAD = ("run", "source", "load", "ok/sent", "req/s", "TTFT P50", "TTFT P95", "TTFT P99", "TPOT P50",
        "TPOT P95", "e2e P95", "basis", "counted")  # fmt: skip


def _nearest_rank(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p * len(ordered) / 100)) - 1]


def _expected(values: dict[str, list[float]]) -> list[str]:
    cols = (("ttft", 50), ("ttft", 95), ("ttft", 99), ("tpot", 50), ("tpot", 95), ("e2e", 95))
    return [f"{_nearest_rank(values[m], p) * 1000:.1f}" for m, p in cols]


def _peer_values() -> dict[str, list[float]]:
    """TTFT, TPOT ((e2e - ttft) / (output tokens - 1), as vLLM defines it) and e2e per request."""
    doc = json.loads(DETAILED.read_text())
    ok = [i for i, err in enumerate(doc["errors"]) if not err]
    ttft = [doc["ttfts"][i] for i in ok]
    e2e = [doc["latencies"][i] for i in ok]
    tpot = [(e2e[k] - ttft[k]) / (doc["output_lens"][i] - 1) for k, i in enumerate(ok)]
    return {"ttft": ttft, "tpot": tpot, "e2e": e2e}


def _table(out: str) -> list[list[str]]:
    start = out.index("| run | source |")
    rows = [line for line in out[start:].splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def _stored(cfg: Path, run_id: int) -> StoredRun:
    db = Store(f"sqlite:///{cfg.parent}/m3mon.db")
    try:
        with db.session() as s:
            run = run_by_id(s, run_id)
    finally:
        db.close()
    assert run is not None
    return run


def test_replay_and_imported_runs_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with running_simulator(**SETTINGS) as sim:  # type: ignore[arg-type]
        cfg = _config(tmp_path, sim.base_url)
        status, out, err = m3mon(capsys, "replay", "-c", str(cfg), "--class", "small", "--profile",
                                 str(tmp_path / "small.yaml"), "--duration", "1.5s", "--rate", "6", "--json")  # fmt: skip
        assert status == 0 and json.loads(out)["run_id"] == 1, out + err
        status, out, err = m3mon(
            capsys, "contract", "-c", str(cfg), "--class", "small", "--import", str(DETAILED)
        )
    assert status == 0, out + err
    assert "* **Runs**: every stored run, oldest first; percentiles in ms as stored" in out
    head, rule, *rows = _table(out)
    assert tuple(head) == HEAD and set(rule) == {"---"}
    peer, replay = rows  # oldest start first: the benchmark ran before this test's replay
    doc = json.loads(DETAILED.read_text())
    assert peer[:5] == ["2", "vllm bench serve", "rate 4", "24/24", f"{doc['request_throughput']:.2f}"]
    assert peer[5:] == [*_expected(_peer_values()), "per-request values", "yes"]
    summary = _stored(cfg, 1).summary
    sent, ok = summary["requests"], summary["succeeded"]
    assert replay[:5] == [
        "1",
        "m3mon replay",
        "rate 6",
        f"{ok}/{sent}",
        f"{summary['request_throughput']:.2f}",
    ]
    assert replay[5:] == [*_expected(summary["samples"]), "per-request values", "yes"]
