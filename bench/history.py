"""Benchmark: generating history (goal: the demo's week in about a minute, so `make demo` fits in five).

Writes the demo's history (the example config, probe rounds at least two minutes apart, spans from
two pools, the database outage spooled and replayed) into a throwaway SQLite store, for one day
(the baseline) and for a week, in the same run, and prints each part's seconds (draw, write,
evaluate), the rows written and the ratio of the week to the day (7 would be linear).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from monitor.demo.history import HISTORY_MIN_PROBE_INTERVAL, NO_SPANS
from monitor.history import History, folder_outage, write_history
from monitor.model import load_model
from monitor.store import Store
from monitor.store.migrate import upgrade

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "monitor.yaml"
END = 1_796_036_400.0  # a Monday, 09:00 UTC
GOAL_SECONDS = 75.0


def measure(directory: Path, days: float) -> tuple[float, History]:
    model = load_model(EXAMPLE)
    db = directory / "db" / "history.db"
    db.parent.mkdir(parents=True)
    upgrade(f"sqlite:///{db}")
    store = Store(f"sqlite:///{db}")
    intervals = {c.name: max(HISTORY_MIN_PROBE_INTERVAL, c.probe.interval) for c in model.classes}
    try:
        t0 = time.perf_counter()
        hist = write_history(model, store, END, days, probe_intervals=intervals,
                             otlp=[e.name for e in model.endpoints if e.name not in NO_SPANS],
                             outage=(folder_outage(db), directory / "spool"))  # fmt: skip
        return time.perf_counter() - t0, hist
    finally:
        store.close()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="m3mon-bench-history-") as tmp:
        day = measure(Path(tmp) / "day", 1.0)
        week = measure(Path(tmp) / "week", 7.0)
    for label, (total, h) in (("1 day (baseline)", day), ("7 days", week)):
        parts = "  ".join(f"{k} {v:5.1f} s" for k, v in h.seconds.items())
        print(f"{label:<17} {total:6.1f} s  ({parts})  {h.probes:,} probes, {h.spans:,} spans, "
              f"{h.intervals:,} intervals, {h.slices:,} slices, {h.evaluations:,} evaluations")  # fmt: skip
    print(f"ratio 7 days / 1 day: {week[0] / day[0]:.2f}x")
    verdict = "OK" if week[0] <= GOAL_SECONDS else "OVER"
    print(f"a week of history: {week[0]:.1f} s (goal <= {GOAL_SECONDS:g} s): {verdict}")


if __name__ == "__main__":
    main()
