"""Benchmark: evaluating every SLO window from a month of 15 s event slices in SQLite.

Builds a temporary SQLite store holding 30 days of 15-second event slices for 10 classes x 5
SLOs (8.64 M slices; ``M3MON_BENCH_DAYS`` shrinks it), rebuilds the hourly rollups, then times:

* evaluate: all windows (5m ... 30d, week, month) of all 50 SLOs at one instant (goal <= 1 s);
* raw evaluate: the same counts summed from raw slices only (what the rollups avoid);
* report week: reading a week of hourly stored evaluations back through the report API;

and prints each as a ratio to a baseline measured in the same run: one ``SELECT count(*)`` over
the slice table.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy import func, select, text

from monitor.model import SLO
from monitor.slo.evaluate import evaluate_counts
from monitor.store import Store
from monitor.store import queries as q
from monitor.store.counts import rebuild_rollups
from monitor.store.migrate import upgrade
from monitor.store.ops import evaluations_op
from monitor.store.tables import EventSliceRow

DAYS = int(os.environ.get("M3MON_BENCH_DAYS", "30"))
STEP = 15.0
NOW = 1_767_225_600.0 + 40 * 86400  # 2026-02-10 00:00 UTC
SLOS = [
    SLO(f"class-{c}", f"slo-{i}", "availability", 0.999, 30 * 86400.0, "server")
    for c in range(10)
    for i in range(5)
]


def rows() -> Iterator[tuple[object, ...]]:
    rnd = random.Random(7)
    start = NOW - DAYS * 86400
    n = int(DAYS * 86400 / STEP)
    for slo in SLOS:
        for k in range(1, n + 1):
            end = start + k * STEP
            total = float(rnd.randint(5, 40))
            yield slo.id, "ep", "server", "server", end - STEP, end, total - (rnd.random() < 0.01), total, 1


def timed(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def build(store: Store) -> None:
    raw = store.engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute("PRAGMA synchronous=OFF")
        cur.execute("PRAGMA cache_size=-400000")
        cur.executemany(
            'INSERT INTO event_slices (slo_id, endpoint, origin, source, start, "end", good, total, exact) '
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows(),
        )
        raw.commit()
    finally:
        raw.close()
    t = time.perf_counter()
    with store.session() as s:
        rebuild_rollups(s)
    print(f"rebuilt hourly rollups in {time.perf_counter() - t:.1f}s")


def raw_counts(store: Store) -> None:
    s = EventSliceRow
    with store.session() as session:
        for slo in SLOS:
            for w in evaluate_counts(slo, NOW, lambda *_: (0.0, 0.0)).windows:
                q_ = select(func.sum(s.good), func.sum(s.total))
                session.execute(q_.where(s.slo_id == slo.id, s.end > w.start, s.end <= w.end)).one()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="m3mon-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        upgrade(url)
        store = Store(url)
        t = time.perf_counter()
        build(store)
        print(f"built {len(SLOS)} SLOs x {DAYS} days of {STEP:g}s slices in {time.perf_counter() - t:.1f}s")

        def baseline() -> None:
            with store.session() as s:
                s.execute(text("SELECT count(*) FROM event_slices")).one()

        def evaluate() -> None:
            with store.counter() as counts:
                for slo in SLOS:
                    evaluate_counts(slo, NOW, counts)

        week = [
            evaluate_counts(slo, NOW - h * 3600, lambda *_: (99.0, 100.0)) for h in range(168) for slo in SLOS
        ]
        store.apply([evaluations_op(week)])

        def report_week() -> None:
            with store.session() as s:
                q.evaluations(s, NOW - 7 * 86400, NOW + 1)

        base = timed(baseline)
        results = {
            "evaluate all windows": timed(evaluate),
            "raw-only evaluate": timed(lambda: raw_counts(store), 1),
            "report week read": timed(report_week),
        }
        print(f"baseline count(*) of {DAYS * 86400 / STEP * len(SLOS):,.0f} slices: {base * 1000:.1f} ms")
        for name, secs in results.items():
            print(f"{name:<22} {secs * 1000:9.1f} ms   ratio to baseline {secs / base:6.2f}")
        goal = results["evaluate all windows"]
        print(f"goal: evaluate all windows <= 1 s: {'met' if goal <= 1.0 else 'NOT met'} ({goal:.3f} s)")
        store.close()


if __name__ == "__main__":
    main()
