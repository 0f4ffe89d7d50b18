"""Fleet mode on loopback: 2 shards x 2 replicas, 20 simulated endpoints, real PostgreSQL and Prometheus.

One module-scoped stack; the tests run in order and build on each other: the healthy fleet
(each endpoint probed by exactly its shard, one row per slot, one evaluator; each replica probes
only the slots it claimed, so a pair probes each slot once), then kill -9 of the
evaluator (another takes over within two steps, no evaluation missing or doubled), then a whole
shard killed (its endpoints' absence alert fires in Prometheus; nothing is rebalanced).
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from monitor import conventions as cv
from monitor.generate.fleet_rules import fleet_groups
from monitor.generate.prometheus_config import vllm_jobs
from monitor.generate.rules import rule_file
from monitor.model import Fleet as FleetModel
from monitor.model import FleetMonitor, load_model
from tests.fleet.stack import CLASS, SHARDS, STEP, Fleet, prometheus_shard, running_fleet
from tests.support import localhttp
from tests.support.prometheus import query, running_prometheus, wait_for

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def stack(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fleet, str]]:
    tmp = tmp_path_factory.mktemp("fleet")
    with running_fleet(postgres_url, tmp) as fleet:
        model = load_model(fleet.config)
        monitors = tuple(FleetMonitor(r.shard, r.name, f"127.0.0.1:{r.port}") for r in fleet.replicas)
        model = model.__class__(**{**model.__dict__, "fleet": FleetModel(SHARDS, None, None, monitors)})
        (tmp / "prom").mkdir()
        (tmp / "prom" / "fleet.rules.yml").write_text(
            rule_file(fleet_groups(model, ("0s", "0s")), model.alerting, "test")
        )
        with running_prometheus(_prometheus_config(model, tmp / "prom"), tmp / "prom") as prom:
            yield fleet, prom


def _prometheus_config(model: Any, tmp: Path) -> dict[str, Any]:
    """The replicas every 2 s (the scrape timeout: a loaded replica answers late) with the fleet rules, and per shard the generated hashmod-sharded
    vLLM job (scraped once a minute: only its target selection is checked)."""
    from monitor.fleet.shard import Shard
    from monitor.generate.prometheus_config import _monitor_job

    jobs: list[dict[str, Any]] = []
    for k in range(SHARDS):
        for job in vllm_jobs(model, 60.0, Shard(k, SHARDS)):
            jobs.append(job | {"job_name": f"vllm-shard-{k}"})
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp / "fleet.rules.yml")],
        "scrape_configs": [*jobs, _monitor_job(model, 2.0, model.fleet.monitors)],
    }


def _rows(url: str, sql: str) -> list[Any]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql)))
    finally:
        engine.dispose()


def _evaluators(fleet: Fleet) -> list[str]:
    alive = [r for r in fleet.replicas if r.proc.poll() is None]
    return [r.name for r in alive if r.gauge(cv.FLEET_EVALUATOR) == 1.0]


def test_each_endpoint_probed_by_its_shard_once_per_slot_and_one_evaluator(stack: tuple[Fleet, str]) -> None:
    fleet, prom = stack
    wait_for(lambda: len(_rows(fleet.url, "SELECT DISTINCT endpoint FROM probe_results WHERE slot IS NOT NULL"))
             == len(fleet.endpoints), 40, "every endpoint probed")  # fmt: skip
    time.sleep(STEP)  # one more slot, claimed by both replicas of each pair
    oracle = {e: prometheus_shard(e, SHARDS) for e in fleet.endpoints}
    # Prometheus' own hashmod over the generated per-shard jobs keeps the same endpoints
    active = localhttp.get(f"{prom}/api/v1/targets", params={"state": "active"}, timeout=5).json()
    targets = [
        t["labels"] for t in active["data"]["activeTargets"] if t["labels"]["job"].startswith("vllm-shard-")
    ]
    assert {t["endpoint"]: int(t["job"].rsplit("-", 1)[1]) for t in targets} == oracle
    claims = _rows(fleet.url, "SELECT endpoint, replica FROM probe_claims")
    assert {e for e, _ in claims} == set(fleet.endpoints)
    assert all(int(r.split("-")[0]) == oracle[e] for e, r in claims), "a claim by the wrong shard"
    assert _rows(fleet.url, "SELECT endpoint, kind, slot FROM probe_results GROUP BY endpoint, kind, slot "
                            "HAVING count(*) > 1") == []  # fmt: skip
    ((probes, slices),) = _rows(
        fleet.url,
        "SELECT (SELECT count(*) FROM probe_results), (SELECT count(*) "
        f"FROM event_slices WHERE slo_id = '{CLASS}/availability')",
    )  # one snapshot
    assert slices == probes, "a pair partner's dropped probe still wrote events"
    assert len(_rows(fleet.url, "SELECT DISTINCT replica FROM probe_claims")) >= SHARDS
    assert _rows(fleet.url, "SELECT endpoint, slot FROM scrape_intervals GROUP BY endpoint, slot "
                            "HAVING count(*) > 1") == []  # fmt: skip
    assert len(_evaluators(fleet)) == 1
    total = wait_for(lambda: query(prom, f"sum({cv.FLEET_EVALUATOR}) and count({cv.FLEET_EVALUATOR}) == 4"),
                     30, "all four replicas scraped")  # fmt: skip
    assert float(total[0]["value"][1]) == 1.0


def _counters(rep: Any) -> dict[str, float]:
    """One /metrics snapshot of a replica: probes run, and its claims won/lost/unavailable."""
    out = dict.fromkeys(("runs", "won", "lost", "unavailable"), 0.0)
    for line in localhttp.get(f"{rep.url}/metrics", timeout=10).text.splitlines():
        value = line.rsplit(" ", 1)[-1]
        if line.startswith(cv.PROBE_TOTAL + "{"):
            out["runs"] += float(value)
        elif line.startswith(cv.FLEET_PROBE_CLAIMS + "{"):
            out[line.split('result="', 1)[1].split('"', 1)[0]] += float(value)
    return out


def test_a_pair_probes_each_slot_once(stack: tuple[Fleet, str]) -> None:
    """Each replica runs only the probes it claimed: in one /metrics snapshot its probe runs never
    exceed its won claims (plus any round it could not claim), and it won no more claims than the
    database holds for it. Guard: some replica has lost more claims than one round of its shard's
    probes (the most that can be in flight), so had it probed its lost slots too (the claim filter
    ignored) its runs would exceed its won claims."""
    fleet, _ = stack
    size = {k: sum(prometheus_shard(e, SHARDS) == k for e in fleet.endpoints) for k in range(SHARDS)}
    snaps: dict[str, dict[str, float]] = {}

    def contested() -> bool:
        snaps.update({r.name: _counters(r) for r in fleet.replicas})
        return any(snaps[r.name]["lost"] > size[r.shard] for r in fleet.replicas)

    wait_for(contested, 40, "a replica that lost more than a round of claims")
    won = dict(_rows(fleet.url, "SELECT replica, count(*) FROM probe_claims GROUP BY replica"))
    print(f"pair probes: {snaps}, claims stored {won}")  # shown with -s
    for name, c in snaps.items():
        assert c["runs"] <= c["won"] + c["unavailable"], f"{name} probed slots it did not claim: {c}"
        assert c["won"] <= won.get(name, 0), f"{name} counts claims the database does not hold"
    # each run is a stored row of its own slot: the rows catch up with the runs the snapshot counted
    # (had both replicas probed every slot, runs would be about twice the rows)
    runs = sum(c["runs"] for c in snaps.values())
    wait_for(lambda: _rows(fleet.url, "SELECT count(*) FROM probe_results")[0][0] >= runs, 10, "rows >= runs")


def _lock_holders(fleet: Fleet) -> set[int]:
    """Backend pids holding a granted advisory lock (only the evaluator lock is taken)."""
    return {
        pid
        for (pid,) in _rows(
            fleet.url,
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())",
        )
    }


def test_kill_9_of_the_evaluator_fails_over_within_two_steps(stack: tuple[Fleet, str]) -> None:
    fleet, _ = stack
    # retried: once, on a loaded 2-worker run, a live replica refused one /metrics connection here
    (leader,) = wait_for(lambda: _evaluators(fleet), 4 * STEP, "the evaluator's gauge")
    (holder,) = _lock_holders(fleet)
    victim = next(r for r in fleet.replicas if r.name == leader)
    victim.stop(signal.SIGKILL)
    killed = time.time()
    successor = wait_for(lambda: _lock_holders(fleet) - {holder}, 4 * STEP, "a new lock holder", every=0.1)
    took = time.time() - killed
    assert len(successor) == 1
    print(f"failover: lock re-acquired {took:.2f}s after kill -9")  # shown with -s (docs/fleet.md)
    assert took <= 2 * STEP + 1.0, f"failover took {took:.1f}s"
    wait_for(lambda: _rows(fleet.url, f"SELECT 1 FROM evaluations WHERE evaluated_at >= {killed + STEP}"),
             6 * STEP, "evaluations after the failover")  # fmt: skip
    new = wait_for(lambda: _evaluators(fleet), 4 * STEP, "the new evaluator's gauge")
    assert len(new) == 1 and new[0] != leader
    per_step = _rows(fleet.url, "SELECT evaluated_at, json_array_length(windows -> 'window') FROM evaluations WHERE slo_id = "
                                f"'{CLASS}/availability' ORDER BY evaluated_at")  # fmt: skip
    instants = [float(t) for t, _ in per_step]
    assert len({n for _, n in per_step}) == 1, "a step with missing or doubled windows"
    assert all(b - a == STEP for a, b in itertools.pairwise(instants)), "a missing step"
    assert instants[-1] >= killed + STEP


def test_a_dead_shard_fires_the_absence_alert_for_its_endpoints(stack: tuple[Fleet, str]) -> None:
    fleet, prom = stack
    (evaluator,) = _evaluators(fleet)
    dead = 1 - int(evaluator.split("-")[0]) if SHARDS == 2 else 0
    for rep in fleet.replicas:
        if rep.shard == dead:
            rep.stop(signal.SIGKILL)
    expected = {e for e in fleet.endpoints if prometheus_shard(e, SHARDS) == dead}

    def firing() -> set[str]:
        alerts = query(prom, f'ALERTS{{alertname="{cv.ALERT_ENDPOINT_UNMONITORED}", alertstate="firing"}}')
        return {a["metric"]["endpoint"] for a in alerts}

    wait_for(lambda: firing() == expected, 15, f"{cv.ALERT_ENDPOINT_UNMONITORED} for shard {dead}")
    live = query(prom, "m3mon:fleet_endpoint_replicas")
    assert {s["metric"]["endpoint"] for s in live} == set(fleet.endpoints) - expected  # not rebalanced
    assert _evaluators(fleet) == [evaluator]
