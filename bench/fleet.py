"""Benchmark: how many endpoints one fleet replica holds, the fleet evaluator, the fleet's DB writes.

Needs PostgreSQL's binaries (a throwaway cluster as in tests/support/postgres.py, run as root).

1. Replica capacity. One ``m3mon run --shard 0/1`` on PostgreSQL against simulators (in another
   process, so their CPU is not counted) with the example's probe mix: endpoint i is a copy of
   example endpoint i mod 3 with its classes, probe kinds, intervals and scrape interval. All
   intervals are divided by SPEED (``M3MON_BENCH_SPEED``, default 6) so a short window sees many
   rounds; CPU and writes are scaled back by SPEED. Runs with 1 and with N endpoints
   (``M3MON_BENCH_ENDPOINTS``, default 12; measuring window ``M3MON_BENCH_WINDOW`` s, default 45);
   prints CPU(N)/CPU(1), the marginal CPU per endpoint, the endpoints one replica holds at <= 50 %
   of one core (a linear projection beyond N), and the replicas 1,000 endpoints need.
   ``M3MON_BENCH_EVALUATOR=0`` skips part 3: e.g. ``M3MON_BENCH_ENDPOINTS=96 M3MON_BENCH_SPEED=2
   M3MON_BENCH_WINDOW=90`` confirms the projection closer to the projected count.
2. Database writes: rows inserted/updated per second (pg_stat_database) in the same runs, scaled to
   real intervals, per endpoint and for 1,000 endpoints.
3. Evaluator: all windows of 500 SLOs at one instant over 30 days of hourly rollups plus the last
   2 hours of 15 s slices on PostgreSQL; ratio to one ``SELECT count(*)`` over the slices.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.footprint import cpu_seconds, free_port, wait_http  # noqa: E402
from monitor.model import SLO  # noqa: E402
from monitor.slo.evaluate import evaluate_counts  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.migrate import upgrade  # noqa: E402
from tests.support.postgres import PG_BIN, PostgresCluster  # noqa: E402

SPEED = float(os.environ.get("M3MON_BENCH_SPEED", "6"))
ENDPOINTS = int(os.environ.get("M3MON_BENCH_ENDPOINTS", "12"))
WARMUP, WINDOW = 15.0, float(os.environ.get("M3MON_BENCH_WINDOW", "45"))
#: "0" skips part 3 (the evaluator), e.g. for a capacity confirmation run at a larger N
EVALUATOR = os.environ.get("M3MON_BENCH_EVALUATOR", "1") != "0"
DURATIONS = {"s": 1, "m": 60, "h": 3600}

SIMS = """
import json, sys, time
from contextlib import ExitStack
from monitor.sim.harness import running_simulator
with ExitStack() as stack:
    urls = [stack.enter_context(running_simulator(seed=i)).base_url for i in range(int(sys.argv[1]))]
    print(json.dumps(urls), flush=True)
    time.sleep(3600)
"""


def seconds(value: object) -> float:
    text_ = str(value)
    return float(text_[:-1]) * DURATIONS[text_[-1]] if text_[-1] in DURATIONS else float(text_)


def postgres(tmp: Path) -> PostgresCluster:
    root = tmp / "pg"
    root.mkdir()
    shutil.chown(root, "postgres", "postgres")
    cluster = PostgresCluster(f"{PG_BIN}/pg_ctl", root / "data", free_port(), root / "log")
    cmd = ["runuser", "-u", "postgres", "--", f"{PG_BIN}/initdb", "-D", str(cluster.data), "-A", "trust",
           "-U", "postgres", "--no-sync", "-E", "UTF8"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    cluster.start()
    return cluster


def fleet_config(tmp: Path, urls: list[str], port: int) -> Path:
    cfg = yaml.safe_load((ROOT / "examples" / "monitor.yaml").read_text())
    example = cfg["endpoints"]
    eps = []
    for i, url in enumerate(urls):
        ep = dict(example[i % len(example)], name=f"{example[i % len(example)]['name']}-{i}", base_url=url)
        ep.pop("api_key_env", None)
        ep["scrape_interval"] = f"{seconds(ep.get('scrape_interval', '15s')) / SPEED:g}s"
        eps.append(ep)
    served = {c for ep in eps for c in ep["classes"]}
    cfg["endpoints"] = eps
    cfg["request_classes"] = [c for c in cfg["request_classes"] if c["name"] in served]
    for c in cfg["request_classes"]:
        probe = c.setdefault("probe", {})
        probe["interval"] = f"{seconds(probe.get('interval', '60s')) / SPEED:g}s"
        probe["jitter"] = f"{seconds(probe.get('jitter', '5s')) / SPEED:g}s"
    cfg["storage"] = {"buffer_dir": str(tmp / "spool")}
    cfg["exporter"] = {"listen": f"127.0.0.1:{port}"}
    cfg.pop("report", None)
    path = tmp / f"fleet-{len(urls)}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def writes(url: str) -> float:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        row = conn.execute(text("SELECT tup_inserted + tup_updated FROM pg_stat_database "
                                "WHERE datname = current_database()")).one()  # fmt: skip
    engine.dispose()
    return float(row[0])


def run_replica(tmp: Path, url: str, urls: list[str]) -> tuple[float, float]:
    """(CPU share of one core, DB rows written per second), at real (unscaled) intervals."""
    port = free_port()
    cfg = fleet_config(tmp, urls, port)
    env = {**os.environ, "M3MON_STORAGE_URL": url}
    args = [sys.executable, "-m", "monitor", "run", "-c", str(cfg), "--shard", "0/1", "--replica", "bench",
            "--no-report"]  # fmt: skip
    with (tmp / f"replica-{len(urls)}.log").open("ab") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    try:
        wait_http(f"http://127.0.0.1:{port}/-/healthy")
        time.sleep(WARMUP)
        cpu0, rows0, t0 = cpu_seconds(proc.pid), writes(url), time.monotonic()
        time.sleep(WINDOW)
        cpu1, rows1, t1 = cpu_seconds(proc.pid), writes(url), time.monotonic()
    finally:
        proc.terminate()
        proc.wait(20)
    return (cpu1 - cpu0) / (t1 - t0) / SPEED, (rows1 - rows0) / (t1 - t0) / SPEED


def slices(slos: list[SLO], now: float) -> Iterator[tuple[object, ...]]:
    rnd = random.Random(7)
    for slo in slos:
        for k in range(480):
            end = now - k * 15.0
            total = float(rnd.randint(5, 40))
            yield (
                slo.id,
                "ep",
                "server",
                "server",
                end - 15.0,
                end,
                total - (rnd.random() < 0.01),
                total,
                True,
            )


def evaluator(url: str) -> tuple[float, float]:
    """(seconds to evaluate 500 SLOs' windows at one instant, the count(*) baseline)."""
    upgrade(url)
    now = 1_767_225_600.0 + 40 * 86400
    slos = [SLO(f"class-{c}", f"slo-{i}", "availability", 0.999, 30 * 86400.0, "server")
            for c in range(100) for i in range(5)]  # fmt: skip
    store = Store(url)
    raw = store.engine.raw_connection()
    try:
        cur = raw.cursor()
        cols = 'slo_id, endpoint, origin, source, start, "end", good, total, exact'
        with cur.copy(f"COPY event_slices ({cols}) FROM STDIN") as copy:  # type: ignore[attr-defined]
            for row in slices(slos, now):
                copy.write_row(row)
        with cur.copy("COPY slice_rollups (slo_id, hour_end, good, total) FROM STDIN") as copy:  # type: ignore[attr-defined]
            for slo in slos:
                for h in range(2, 31 * 24):
                    copy.write_row((slo.id, now - h * 3600.0, 9990.0, 10000.0))
        cur.execute("ANALYZE")
        raw.commit()
    finally:
        raw.close()

    def best(fn: object, repeat: int = 3) -> float:
        out = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            fn()  # type: ignore[operator]
            out = min(out, time.perf_counter() - t)
        return out

    def evaluate() -> None:
        with store.counter() as counts:
            for slo in slos:
                evaluate_counts(slo, now, counts)

    def baseline() -> None:
        with store.session() as s:
            s.execute(text("SELECT count(*) FROM event_slices")).one()

    result = best(evaluate), best(baseline)
    store.close()
    return result


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="m3mon-bench-fleet-") as tmp_name:
        tmp = Path(tmp_name)
        shutil.chown(tmp, "postgres", "postgres")
        os.chmod(tmp, 0o777)
        cluster = postgres(tmp)
        sims = subprocess.Popen(
            [sys.executable, "-c", SIMS, str(ENDPOINTS)], stdout=subprocess.PIPE, cwd=ROOT
        )
        try:
            assert sims.stdout is not None
            urls: list[str] = json.loads(sims.stdout.readline())
            url = cluster.url
            upgrade(url)
            one_cpu, one_rows = run_replica(tmp, url, urls[:1])
            n_cpu, n_rows = run_replica(tmp, url, urls)
            report(one_cpu, one_rows, n_cpu, n_rows)
            if not EVALUATOR:
                return
            eval_s, base_s = evaluator(url)
            ratio = eval_s / base_s
            print(f"evaluator: 500 SLOs x all windows over 30 days on PostgreSQL: {eval_s:.2f} s "
                  f"({ratio:.1f}x one count(*) over the slices, {base_s * 1000:.1f} ms)")  # fmt: skip
        finally:
            sims.terminate()
            sims.wait(20)
            cluster.stop()


def report(one_cpu: float, one_rows: float, n_cpu: float, n_rows: float) -> None:
    per = (n_cpu - one_cpu) / (ENDPOINTS - 1)
    fixed = max(one_cpu - per, 0.0)
    held = math.floor((0.5 - fixed) / per) if per > 0 else 0
    per_rows = (n_rows - one_rows) / (ENDPOINTS - 1)
    print(f"speed-up {SPEED:g}x, window {WINDOW:g}s; CPU at real intervals, share of one core:")
    print(f"  1 endpoint: {one_cpu * 100:.2f} %   {ENDPOINTS} endpoints: {n_cpu * 100:.2f} %   "
          f"ratio {n_cpu / one_cpu:.2f}")  # fmt: skip
    print(f"  marginal per endpoint: {per * 100:.3f} %, fixed: {fixed * 100:.2f} %")
    beyond = "projected linearly" if held > ENDPOINTS else "within the measured range"
    print(f"  endpoints one replica holds at <= 50 % of one core: {held} ({beyond} from 1 and {ENDPOINTS})")
    if held > 0:
        shards = math.ceil(1000 / held)
        print(f"  1,000 endpoints: {shards} shard(s) -> {2 * shards} replicas as HA pairs")
    ratio = n_rows / max(one_rows, 1e-9)
    print(f"DB writes (rows inserted+updated per second): 1 endpoint {one_rows:.2f}/s, {ENDPOINTS} endpoints "
          f"{n_rows:.2f}/s (ratio {ratio:.2f}); 1,000 endpoints ~{per_rows * 1000:.0f}/s")  # fmt: skip


if __name__ == "__main__":
    main()
