"""Benchmark: one evaluation step of N SLOs, every window, from the running sums (incremental).

``M3MON_BENCH_SLOS`` (default 500; 50,000 is 1,000 tenants × 5 classes × 10 SLOs) server SLOs,
one endpoint each, on ``M3MON_BENCH_URL`` (a PostgreSQL URL; unset: a throwaway PostgreSQL
cluster when its binaries are here, else SQLite). The store holds what a month of 15 s slices
leaves: hourly rollups for 32 days and raw 15 s slices in every hour a window starts in (5m …
30d) and the last three hours. PostgreSQL generates them itself (bench/evaluate_load.py: 50,000
SLOs are 80 M slices and 38 M rollups, ~35 min on a loaded 2-core machine), in time order as the
service writes them, so a window's head is a few hundred contiguous pages, not one page per SLO
(loaded SLO-major, the step's statement spent 262 ms on the server instead of 61 ms at 5,000).
``M3MON_BENCH_REUSE=1`` with a URL times again on an earlier run's load (reset, not reloaded).
Then:

* rebuild: the first :func:`evaluate_due` after a start (reads every SLO's last evaluation and
  rebuilds the running sums from the rollups) — goal <= 60 s at 50,000 SLOs;
* step: each next minute's slices are written through the store's write path, then one
  :func:`evaluate_due` (plans, announce, running sums, all windows, status, stored evaluations) is
  timed, best and median of ``M3MON_BENCH_STEPS`` (default 5) — goal <= 1 s at 50,000 SLOs; the
  share spent storing the evaluations is printed apart;
* old evaluator: today's per-window SQL counts (:class:`monitor.store.counts.EventCounts`) for
  the same instant, on up to ``M3MON_BENCH_OLD`` (200; 0: skipped) SLOs, scaled per SLO, and
  checked equal to the running sums;

each as a ratio to a baseline measured in the same run: one ``SELECT count(*)`` over the slices.
"""

from __future__ import annotations

import cProfile
import math
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.evaluate_load import load_postgres, loaded, reset  # noqa: E402
from bench.pg import throwaway_postgres  # noqa: E402
from monitor.model import SLO, Model  # noqa: E402
from monitor.slo.columns import ColumnCounter  # noqa: E402
from monitor.slo.due import Dirty, evaluate_due  # noqa: E402
from monitor.slo.evaluate import SLOEvaluation, evaluate_counts  # noqa: E402
from monitor.slo.slices import EventSlice  # noqa: E402
from monitor.slo.windows import rolling_lengths  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.migrate import upgrade  # noqa: E402
from monitor.store.ops import slices_op  # noqa: E402

N = int(os.environ.get("M3MON_BENCH_SLOS", "500"))
STEPS = int(os.environ.get("M3MON_BENCH_STEPS", "5"))
#: "1": also profile one more step; "rebuild": profile the rebuild (cProfile, top 25 by cumulative time)
PROFILE = os.environ.get("M3MON_BENCH_PROFILE", "")
#: SLOs the per-window SQL evaluator is timed and checked on (0: not run; 200 take minutes at 50,000)
OLD = int(os.environ.get("M3MON_BENCH_OLD", "200"))
#: "1" with M3MON_BENCH_URL: time again on an earlier run's load of N SLOs (reset, not reloaded)
REUSE = os.environ.get("M3MON_BENCH_REUSE") == "1"
HOUR, SCRAPE = 3600.0, 15.0
NOW = 1_767_225_600.0 + 40 * 86400 + 40 * 60  # 2026-02-10 00:40 UTC: windows start mid-hour
SLOS = [
    SLO(f"class-{i // 5}", f"slo-{i % 5}", "availability", 0.999, 30 * 86400.0, "server") for i in range(N)
]


def raw_hours() -> list[float]:
    """Ends of the hours holding raw slices: where a window starts, and the last three."""
    top = math.floor(NOW / HOUR) * HOUR
    starts = {math.floor((NOW - n) / HOUR) * HOUR + HOUR for n in rolling_lengths(SLOS)}
    return sorted(starts | {top - HOUR, top, top + HOUR})


def slice_rows(rnd: random.Random, hour_end: float, until: float) -> Iterator[tuple[float, float, float]]:
    """(end, good, total) of the 15 s slices ending in ``(hour_end − 1h, min(hour_end, until)]``."""
    end = hour_end - HOUR + SCRAPE
    while end <= min(hour_end, until):
        total = float(rnd.randint(5, 40))
        yield end, total - (rnd.random() < 0.01), total
        end += SCRAPE


def rows() -> Iterator[tuple[str, tuple[object, ...]]]:
    """("slice" | "rollup", row) of every SLO: 32 days of hourly rollups, raw slices where needed;
    a rollup of an hour with raw slices is their exact sum."""
    rnd, hours, top = random.Random(7), set(raw_hours()), math.floor(NOW / HOUR) * HOUR + HOUR
    for slo in SLOS:
        for h in (top - k * HOUR for k in range(32 * 24 + 1)):
            raw = list(slice_rows(rnd, h, NOW)) if h in hours else []
            for e, g, t in raw:
                yield "slice", (slo.id, "ep", "server", "server", e - SCRAPE, e, g, t, True)
            good, total = (sum(r[1] for r in raw), sum(r[2] for r in raw)) if raw else (9990.0, 1e4)
            yield "rollup", (slo.id, h, good, total)


def load(store: Store) -> None:
    """Bulk-load rollups and raw slices (the write path is timed per step, not for a month)."""
    cols = 'slo_id, endpoint, origin, source, start, "end", good, total, exact'
    raw = store.engine.raw_connection()
    counted = {"slice": 0, "rollup": 0}
    try:
        cur = raw.cursor()
        if store.engine.dialect.name == "postgresql":
            for kind, table in (("slice", f"event_slices ({cols})"), ("rollup", "slice_rollups")):
                with cur.copy(f"COPY {table} FROM STDIN") as copy:  # type: ignore[attr-defined]
                    for row in (r for k, r in rows() if k == kind):  # rows() is deterministic
                        copy.write_row(row)
                        counted[kind] += 1
        else:
            for kind, row in rows():
                table = f"event_slices ({cols})" if kind == "slice" else "slice_rollups"
                cur.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
                counted[kind] += 1
        raw.commit()
    finally:
        raw.close()
    print(f"loaded {counted['slice']:,} slices and {counted['rollup']:,} hourly rollups of {N:,} SLOs")


class TimedStore(Store):
    """The store, timing each part of a step it serves: planning (dirty marks, last instants),
    the announcement, advancing the running sums, storing the evaluations."""

    parts: dict[str, float] = {}

    def _timed(self, part: str, t: float) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + time.perf_counter() - t

    @contextmanager
    def step_counter(
        self, at: float, slo_ids: Sequence[str], lengths: Iterable[float]
    ) -> Iterator[ColumnCounter]:
        t = time.perf_counter()
        with super().step_counter(at, slo_ids, lengths) as counts:
            self._timed("advance", t)
            yield counts

    def save_evaluations(self, evaluations: Sequence[SLOEvaluation], replace: bool = False) -> int:
        t = time.perf_counter()
        try:
            return super().save_evaluations(evaluations, replace)
        finally:
            self._timed("store", t)

    def dirty(self, slo_ids: Sequence[str]) -> list[Dirty]:
        t = time.perf_counter()
        try:
            return super().dirty(slo_ids)
        finally:
            self._timed("plan", t)

    def last_evaluated(self, slo_ids: Sequence[str]) -> dict[str, float]:
        t = time.perf_counter()
        try:
            return super().last_evaluated(slo_ids)
        finally:
            self._timed("plan", t)

    def announce(self, until: Mapping[str, float]) -> None:
        t = time.perf_counter()
        try:
            super().announce(until)
        finally:
            self._timed("announce", t)


def write_minute(store: Store, rnd: random.Random, before: float, at: float) -> None:
    ends = [e for e in (before + k * SCRAPE for k in range(1, 5)) if e <= at]
    slices = [EventSlice(s.id, "ep", "server", e - SCRAPE, e, 20.0 - (rnd.random() < 0.01), 20.0, "server")
              for s in SLOS for e in ends]  # fmt: skip
    store.apply([slices_op(slices)])


def old_evaluator(store: Store, at: float, got: dict[str, SLOEvaluation]) -> float:
    """Seconds per SLO for today's per-window SQL counts; checks they equal the running sums."""
    sample = SLOS[:OLD]
    t = time.perf_counter()
    with store.counter() as counts:
        old = [evaluate_counts(slo, at, counts) for slo in sample]
    per_slo = (time.perf_counter() - t) / len(sample)
    assert all(o == got[o.slo_id] for o in old), "running sums differ from the per-window SQL counts"
    return per_slo


def profiled(f: Callable[..., Sequence[SLOEvaluation]], *args: object) -> Sequence[SLOEvaluation]:
    profile = cProfile.Profile(time.process_time)  # CPU time: a shared machine's waits are not ours
    done = profile.runcall(f, *args)
    pstats.Stats(profile).sort_stats(os.environ.get("M3MON_BENCH_SORT", "cumulative")).print_stats(25)
    return done


def run(url: str) -> None:
    upgrade(url)
    store = TimedStore(url)
    model = cast(Model, SimpleNamespace(slos=SLOS))
    if store.engine.dialect.name != "postgresql":
        load(store)
        with store.session() as s:
            s.execute(text("ANALYZE"))
    elif REUSE and loaded(store, N):
        reset(store, NOW)
        print(f"reusing the loaded month of {N:,} SLOs at {url.rsplit('@', 1)[-1]}")
    else:  # in time order, as the service writes (evaluate_load.py)
        load_postgres(store, [s.id for s in SLOS], raw_hours(), NOW)

    def baseline() -> float:
        t = time.perf_counter()
        with store.session() as s:
            s.execute(text("SELECT count(*) FROM event_slices")).one()
        return time.perf_counter() - t

    t = time.perf_counter()
    if PROFILE == "rebuild":
        profiled(evaluate_due, store, model, NOW)
    else:
        evaluate_due(store, model, NOW)
    rebuild = time.perf_counter() - t
    rnd, steps, at = random.Random(11), [], NOW
    saves: list[dict[str, float]] = []
    done: Sequence[SLOEvaluation] = []
    for _ in range(STEPS):
        write_minute(store, rnd, at, at + 60)
        at += 60
        store.parts = {}
        t, cpu = time.perf_counter(), time.process_time()
        done = evaluate_due(store, model, at)
        steps.append(time.perf_counter() - t)
        saves.append(store.parts | {"evaluate": steps[-1] - sum(store.parts.values())})
        saves[-1]["client CPU"] = time.process_time() - cpu
        assert len(done) == N, f"{len(done)} evaluations, expected {N}"
    if PROFILE == "1":
        write_minute(store, rnd, at, at + 60)
        at += 60
        done = profiled(evaluate_due, store, model, at)
    old = old_evaluator(store, at, {e.slo_id: e for e in done}) if OLD else math.nan
    base = min(baseline() for _ in range(3))
    report(base, rebuild, steps, saves, old, store.running.memory() / N)
    store.close()


def report(
    base: float, rebuild: float, steps: list[float], saves: list[dict[str, float]], old: float, mem: float
) -> None:
    best, median = min(steps), statistics.median(steps)
    i = steps.index(best)
    print(f"baseline count(*): {base * 1000:.1f} ms")
    parts = ", ".join(f"{k} {v:.3f} s" for k, v in saves[i].items())
    print(f"{N:,} SLOs: one step (all windows) best {best:.3f} s, median {median:.3f} s "
          f"({best / base:.1f}x one count(*)); of it {parts}")  # fmt: skip
    print(
        "  (plan: dirty marks and last instants; announce: the evaluation bound; advance: the running "
        "sums, one statement; evaluate: the windows and statuses in Python; store: one statement; "
        "client CPU: the bench process's CPU time in the step, less noisy than wall time on a shared machine)"
    )
    print(f"{N:,} SLOs: rebuild after a start {rebuild:.2f} s ({rebuild / base:.0f}x one count(*))")
    if OLD:
        print(f"{N:,} SLOs: today's per-window SQL evaluator {old * N:.2f} s for the same step "
              f"({old * N / best:.0f}x the incremental step; measured on {min(N, OLD)} SLOs)")  # fmt: skip
    print(f"running sums: {mem / 1024:.1f} KiB per SLO")
    print(f"goal: one step of {N:,} SLOs <= 1 s: {'met' if best <= 1.0 else 'NOT met'}; "
          f"rebuild <= 60 s: {'met' if rebuild <= 60 else 'NOT met'}")  # fmt: skip


def main() -> None:
    with ExitStack() as stack:
        url = os.environ.get("M3MON_BENCH_URL")
        if url is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="m3mon-bench-")))
            url = stack.enter_context(throwaway_postgres(tmp)) or f"sqlite:///{tmp / 'bench.db'}"
        run(url)


if __name__ == "__main__":
    main()
