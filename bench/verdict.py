"""Benchmark: the bottleneck verdict's scenario matrix (docs/bottleneck.md "Scenarios").

Every world of :data:`monitor.sim.world_scenarios.WORLDS` runs for an hour of simulated time (its
fault from minute 20), and the verdict is decided every 15 s as the service assesses a class.
Printed:

* the confusion matrix: one row per world (its expected verdict), one column per verdict, the
  count of verdicts once the fault holds (the whole hour for a control);
* per world: false verdicts before the onset, seconds from the onset to the right verdict (the
  first one after which no wrong one follows), wrong verdicts after it, flips over the hour;
* the totals the issue's "done when" asks for: wrong verdicts and flips on the healthy pools, the
  slowest time to the right verdict.

``M3MON_BENCH_WORLDS`` (comma-separated names) runs a subset; ``M3MON_BENCH_REAL=1`` then runs the
matrix's reachable cases against a real vLLM (:mod:`bench.verdict_real`: overload, long prompts)
and prints them beside. Simulated time, so the numbers do
not depend on the machine; the wall time is printed as a ratio to one world's simulation alone.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.bottleneck.rules import VERDICTS
from monitor.sim.verdict_matrix import Judged, judge
from monitor.sim.world_scenarios import WORLDS
from monitor.sim.worlds import simulate

SHORT = {"insufficient_evidence": "insuf", "load_shedding": "shed", "retry_storm": "retry",
         "application_bound": "app", "proxy_bound": "proxy", "cache_bound": "cache", "gpu_bound": "gpu",
         "scheduler_bound": "sched", "queue_bound": "queue", "prefill_bound": "prefill",
         "decode_bound": "decode", "none": "none"}  # fmt: skip


def _matrix(results: list[Judged]) -> list[str]:
    width = max(len(r.world.name) for r in results) + 2
    head = "world".ljust(width) + "expect".ljust(9) + "".join(SHORT[v].rjust(8) for v in VERDICTS)
    rows = [head, "-" * len(head)]
    for r in results:
        counts = r.counts()
        expect = SHORT[r.world.expect[0]] if r.world.after is not None else SHORT[r.control]
        cells = "".join((str(counts[v]) if counts[v] else ".").rjust(8) for v in VERDICTS)
        rows.append(r.world.name.ljust(width) + expect.ljust(9) + cells)
    return rows


def _timing(results: list[Judged]) -> list[str]:
    width = max(len(r.world.name) for r in results) + 2
    head = "false before onset   to verdict (s)   wrong after   flips/h   to clear (s)"
    rows = ["world".ljust(width) + head, "-" * (width + len(head))]
    for r in results:
        ttv = (
            "—"
            if r.world.after is None
            else ("never" if r.time_to_verdict is None else f"{r.time_to_verdict:.0f}")
        )
        clear = (
            "—"
            if r.world.until is None
            else ("never" if r.time_to_clear is None else f"{r.time_to_clear:.0f}")
        )
        rows.append(f"{r.world.name.ljust(width)}{r.false_before:>18}{ttv:>17}{r.wrong_after:>14}{r.flips:>10}"
                    f"{clear:>15}")  # fmt: skip
    return rows


def main() -> int:
    wanted = {n for n in os.environ.get("M3MON_BENCH_WORLDS", "").split(",") if n}
    worlds = [w for w in WORLDS if not wanted or w.name in wanted]
    t0 = time.perf_counter()
    simulate(worlds[0])
    baseline = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = [judge(w) for w in worlds]
    elapsed = time.perf_counter() - t0
    print("Bottleneck verdict, scenario matrix: verdicts once the fault holds (every 15 s, 1 h worlds,")
    print("fault from minute 20; controls: the whole hour from minute 5)\n")
    print("\n".join(_matrix(results)))
    print()
    print("\n".join(_timing(results)))
    healthy = [r for r in results if r.world.after is None]
    faults = [r for r in results if r.world.after is not None]
    times = [r.time_to_verdict for r in faults]
    never = [r.world.name for r in faults if r.time_to_verdict is None]
    print()
    print(f"controls: {sum(r.false_before for r in healthy)} wrong verdicts, "
          f"{sum(r.flips for r in healthy)} flips over {len(healthy)} simulated hours")  # fmt: skip
    wrong = sum(r.wrong_after for r in faults)
    print(f"faults: {sum(r.false_before for r in faults)} wrong verdicts before their onsets; "
          f"{wrong} wrong after the right one; never right: {never or 'none'}")  # fmt: skip
    known = [t for t in times if t is not None]
    if known:
        median = sorted(known)[len(known) // 2]
        print(f"time to the right verdict: median {median:.0f} s, slowest {max(known):.0f} s")
    print(f"wall time: {elapsed:.1f} s = {elapsed / baseline:.0f}x one world's simulation ({baseline:.2f} s)")
    real = 0
    if os.environ.get("M3MON_BENCH_REAL", "") not in ("", "0"):
        from bench.verdict_real import main as real_cases

        print()
        real = real_cases()
    return 0 if not never and not any(r.false_before for r in results) and not real else 1


if __name__ == "__main__":
    raise SystemExit(main())
