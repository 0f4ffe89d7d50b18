"""Benchmark: building and rendering the weekly report for 10 request classes (goal <= 10 s).

Builds a throwaway SQLite store with the synthetic week of :mod:`monitor.demo.example`
(37 days of probes every 30 minutes per class, hourly scrape intervals, an incident, a deploy),
then times, for 10 classes and for a 1-class baseline built the same way in the same run:

* collect: reading every number from the store into ReportData;
* render: HTML with charts, the PDF, Markdown and JSON.

Prints seconds and the ratio of the 10-class total to the 1-class total.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from monitor.demo import example
from monitor.report import generate, periods

GOAL_SECONDS = 10.0


def measure(directory: Path, classes: int) -> tuple[float, float]:
    model, store = example.build_store(directory, classes)
    try:
        week = periods.iso_week(example.WEEK, periods.zone("UTC"))
        t0 = time.perf_counter()
        data = generate.build(model, store, week, example.NOW)
        t1 = time.perf_counter()
        generate.render(data)
        t2 = time.perf_counter()
    finally:
        store.close()
    return t1 - t0, t2 - t1


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="m3mon-bench-report-") as tmp:
        measure(Path(tmp) / "warm", 1)  # imports, fonts and matplotlib caches, not measured
        base = measure(Path(tmp) / "one", 1)
        full = measure(Path(tmp) / "ten", 10)
    for label, (c, r) in (("1 class (baseline)", base), ("10 classes", full)):
        print(f"{label:<20} collect {c:6.2f} s  render {r:6.2f} s  total {c + r:6.2f} s")
    total = sum(full)
    print(f"ratio 10 classes / 1 class: {total / sum(base):.2f}x")
    verdict = "OK" if total <= GOAL_SECONDS else "OVER"
    print(f"10-class report: {total:.2f} s (goal <= {GOAL_SECONDS:g} s): {verdict}")


if __name__ == "__main__":
    main()
