"""Benchmark: how many endpoints one fleet replica holds, the fleet evaluator, the fleet's DB writes.

Needs PostgreSQL's binaries (a throwaway cluster as in tests/support/postgres.py, run as root).

1. Replica capacity, measured. One ``m3mon run --shard 0/1`` on PostgreSQL against N simulated
   endpoints served by one other process (bench/sims.py: N ports on one event loop, so the load
   generator stays small and its CPU is not counted) with the example's probe mix: endpoint i is a
   copy of example endpoint i mod 3 with its classes, probe kinds, intervals and scrape interval.
   Runs with 1 and with N endpoints (``M3MON_BENCH_ENDPOINTS``, default 200) at real intervals
   (``M3MON_BENCH_SPEED``, default 1, divides them and scales CPU back) and measures the replica's
   CPU share of one core over ``M3MON_BENCH_WINDOW`` s (default 300) after 30 s of warm-up. The
   window is one whole period of every class: scrapes (15 s, 30 s) and probe rounds (30 s, 60 s,
   5 m) all divide 300 s, and fleet rounds start on epoch-aligned slots, so any 300 s window holds
   exactly one period's work; the extended-context class's 30 m interval is cut to the window
   (probed 6x as often as in the example: the measured CPU is an upper bound). Prints the CPU by
   job (scrape, health, probe, write, evaluate) from the replica's ``m3mon_job_cpu_seconds_total``
   and what is left unattributed; ``M3MON_BENCH_PYSPY=/path/to/py-spy`` also records the
   N-endpoint window and prints its top functions. ``M3MON_BENCH_EVALUATOR=0`` skips part 3.
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

from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.footprint import cpu_seconds  # noqa: E402
from bench.pg import start_postgres  # noqa: E402
from bench.replica import Measured, hot_spots, run_replica  # noqa: E402
from monitor.model import SLO  # noqa: E402
from monitor.slo.evaluate import evaluate_counts  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.migrate import upgrade  # noqa: E402

SPEED = float(os.environ.get("M3MON_BENCH_SPEED", "1"))
ENDPOINTS = int(os.environ.get("M3MON_BENCH_ENDPOINTS", "200"))
WARMUP, WINDOW = 30.0, float(os.environ.get("M3MON_BENCH_WINDOW", "300"))
#: py-spy's path: records the N-endpoint replica over the window, prints its top functions
PYSPY = os.environ.get("M3MON_BENCH_PYSPY")
#: "0" skips part 3 (the evaluator), e.g. for a capacity confirmation run at a larger N
EVALUATOR = os.environ.get("M3MON_BENCH_EVALUATOR", "1") != "0"


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
        cluster = start_postgres(tmp)
        sims: subprocess.Popen[bytes] | None = None
        try:
            sims = subprocess.Popen([sys.executable, str(ROOT / "bench" / "sims.py"), str(ENDPOINTS)],
                                    stdout=subprocess.PIPE, cwd=ROOT)  # fmt: skip
            assert sims.stdout is not None
            urls: list[str] = json.loads(sims.stdout.readline())
            url = cluster.url
            upgrade(url)
            one = replica(tmp, url, urls[:1])
            sims_cpu0, t0 = cpu_seconds(sims.pid), time.monotonic()
            raw = tmp / "profile.txt"
            n = replica(tmp, url, urls, (PYSPY, raw) if PYSPY else None)
            sims_share = (cpu_seconds(sims.pid) - sims_cpu0) / (time.monotonic() - t0)
            report(one, n, sims_share)
            if PYSPY:
                print_profile(raw)
            if EVALUATOR:
                eval_s, base_s = evaluator(url)
                ratio = eval_s / base_s
                print(f"evaluator: 500 SLOs x all windows over 30 days on PostgreSQL: {eval_s:.2f} s "
                      f"({ratio:.1f}x one count(*) over the slices, {base_s * 1000:.1f} ms)")  # fmt: skip
        finally:
            if sims is not None:
                sims.terminate()
                sims.wait(60)
            cluster.stop()


def replica(tmp: Path, url: str, urls: list[str], profile: tuple[str, Path] | None = None) -> Measured:
    return run_replica(tmp, url, urls, speed=SPEED, warmup=WARMUP, window=WINDOW, profile=profile)


def report(one: Measured, n: Measured, sims_share: float) -> None:
    print(f"speed-up {SPEED:g}x, window {WINDOW:g} s after {WARMUP:g} s of warm-up (intervals above "
          f"{WINDOW * SPEED:g} s cut to it); CPU at real intervals, share of one core:")  # fmt: skip
    print(f"  1 endpoint: {one.cpu * 100:.2f} %   {ENDPOINTS} endpoints: {n.cpu * 100:.2f} % (measured)   "
          f"ratio {n.cpu / one.cpu:.2f}; the simulators' process: {sims_share * 100:.1f} %")  # fmt: skip
    for label, m in (("1 endpoint", one), (f"{ENDPOINTS} endpoints", n)):
        kinds = "  ".join(f"{k} {v * 100:.2f} %" for k, v in sorted(m.kinds.items(), key=lambda kv: -kv[1]))
        rest = m.unattributed * 100
        print(f"  by job, {label}: {kinds}  unattributed (event loop, HTTP surface) {rest:.2f} %")
    verdict = "within" if n.cpu <= 0.5 else f"over, by {(n.cpu - 0.5) * 100:.1f} points"
    print(f"  {ENDPOINTS} endpoints on one replica at <= 50 % of one core: {verdict}")
    shards = math.ceil(1000 / ENDPOINTS) if n.cpu <= 0.5 else None
    if shards:
        print(f"  1,000 endpoints: {shards} shard(s) -> {2 * shards} replicas as HA pairs")
    per_rows = (n.rows - one.rows) / max(ENDPOINTS - 1, 1)
    ratio = n.rows / max(one.rows, 1e-9)
    print(f"DB writes (rows inserted+updated per second): 1 endpoint {one.rows:.2f}/s, {ENDPOINTS} endpoints "
          f"{n.rows:.2f}/s (ratio {ratio:.2f}); 1,000 endpoints ~{per_rows * 1000:.0f}/s")  # fmt: skip


def print_profile(raw: Path) -> None:
    print(f"py-spy over the {ENDPOINTS}-endpoint window, top functions (self, inclusive share of samples):")
    for name, own, within in hot_spots(raw):
        print(f"  {own * 100:5.1f} %  {within * 100:5.1f} %  {name}")


if __name__ == "__main__":
    main()
