"""Benchmark: the weekly report's maintenance section on a store of many slices, few in maintenance.

A migrated SQLite store holds two weeks of 15 s slices of 10 SLOs (806,400 slices), of which one
30-minute maintenance occurrence excluded 1,200 (10 SLOs × 120 slices). Times the section's two
queries (:class:`monitor.report.maintenance._Counter`: one window's excluded events by SLO; the
windows no longer configured) with the partial index ``ix_event_slices_maintenance_end`` (migration
0006), then with it dropped, in the same run: the baseline is the scan without it. Goal: the
section costs under 10 ms with the index, so it adds nothing noticeable to a report.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from monitor.config import parse_config  # noqa: E402
from monitor.model import build_model  # noqa: E402
from monitor.report.maintenance import _Counter  # noqa: E402
from monitor.store.migrate import upgrade  # noqa: E402

SLOS = 10
STEP = 15.0
DAYS = 14
T0 = 1_767_571_200.0  # 2026-01-05 00:00 UTC
WINDOW = ("upgrade", T0 + 7 * 86400, T0 + 7 * 86400 + 1800)
CONFIG = """version: m3mon/v1
endpoints: [{name: ep, base_url: "http://127.0.0.1:9", model: m3, classes: [chat]}]
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos: [{name: availability, sli: availability, objective: 99}]
"""


INSERT = text(
    'INSERT INTO event_slices (slo_id, endpoint, origin, source, start, "end", good, total, exact, '
    "maintenance) VALUES (:slo, 'ep', 'server', 'server', :end - 15, :end, 9, 10, 1, :m)"
)


def _fill(url: str) -> int:
    engine = create_engine(url)
    steps = int(DAYS * 86400 / STEP)
    name, start, end = WINDOW
    with engine.begin() as conn:
        for k in range(SLOS):
            rows = [
                {"slo": f"chat/slo{k}", "end": T0 + i * STEP,
                 "m": name if start < T0 + i * STEP <= end else None}
                for i in range(1, steps + 1)
            ]  # fmt: skip
            conn.execute(INSERT, rows)
    engine.dispose()
    return SLOS * steps


def _time(url: str) -> tuple[float, float]:
    """Median seconds of the section's two queries over 15 runs each: (one window, unlisted)."""
    model = build_model(parse_config(CONFIG))
    engine = create_engine(url)
    out = []
    with Session(engine) as session:
        counter = _Counter(model, session)
        for call in (lambda: counter.window(*WINDOW), lambda: counter.unlisted(set(), T0, T0 + 14 * 86400)):
            assert call(), "the excluded slices are found"
            runs = []
            for _ in range(15):
                t = time.perf_counter()
                call()
                runs.append(time.perf_counter() - t)
            out.append(sorted(runs)[len(runs) // 2])
    engine.dispose()
    return out[0], out[1]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        upgrade(url)
        n = _fill(url)
        indexed = _time(url)
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text("DROP INDEX ix_event_slices_maintenance_end"))
        engine.dispose()
        scan = _time(url)
    print(f"maintenance section over {n:,} slices ({SLOS * 120:,} excluded):")
    for what, a, b in (("one window", indexed[0], scan[0]), ("unlisted windows", indexed[1], scan[1])):
        print(f"  {what:<17} indexed {a * 1000:7.2f} ms   scan {b * 1000:8.1f} ms   ratio {b / a:6.0f}x")
    ok = max(indexed) < 0.010
    print(f"goal: section < 10 ms with the index: {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
