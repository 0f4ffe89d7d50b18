"""Loading bench/evaluate.py's month into PostgreSQL inside the server, fast enough for 50,000 SLOs.

The SQLite path (bench/evaluate.py's ``rows()``) generates every row in Python; at 50,000 SLOs
that is 80 M raw slices and 38 M hourly rollups, hours of COPY. Here PostgreSQL generates them:

* the tables' secondary indexes and unique constraints are dropped, the rows inserted, then the
  indexes built again (one sort each instead of 80 M random B-tree inserts);
* raw slices are inserted one scrape instant after another, every SLO's slice of that instant
  together: the order the service writes them in (a window's head is a few hundred contiguous
  pages; no ``CLUSTER`` needed). Each slice: ``total`` uniform in 5..40, one bad event in 1 %;
* hourly rollups are written hour after hour (time-major, as the service upserts them): the exact
  sums of the raw slices where an hour has them, 9,990 good of 10,000 elsewhere.

``reset()`` undoes what a bench run writes after the load (the steps' slices, the rollup of the
open hour, evaluations, progress marks), so ``M3MON_BENCH_REUSE=1`` can time again without
loading again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy import Connection, text

from monitor.store import Store

HOUR, SCRAPE = 3600.0, 15.0
TABLES = ("event_slices", "slice_rollups")


def _drop_indexes(conn: Connection) -> list[str]:
    """Drop the loaded tables' unique constraints and secondary indexes; the statements that
    recreate them."""
    again: list[str] = []
    for table in TABLES:
        cons = conn.execute(
            text(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = CAST(:t AS regclass) AND contype = 'u'"
            ),
            {"t": table},
        ).all()
        for name, definition in cons:
            conn.execute(text(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"'))
            again.append(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
        idx = conn.execute(
            text(
                "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                "WHERE i.indrelid = CAST(:t AS regclass) AND NOT i.indisprimary"
            ),
            {"t": table},
        ).all()
        for name, definition in idx:
            conn.execute(text(f"DROP INDEX {name}"))
            again.append(definition)
    return again


def load_postgres(store: Store, ids: Sequence[str], raw_hours: Sequence[float], now: float) -> None:
    """32 days of hourly rollups ending with the open hour, raw 15 s slices in ``raw_hours``
    (hour ends) up to ``now``, for every SLO in ``ids``."""
    t0 = time.perf_counter()
    top = (now // HOUR) * HOUR + HOUR
    hours = [top - k * HOUR for k in range(32 * 24, -1, -1)]
    with store.engine.begin() as conn:
        conn.execute(text("SET LOCAL maintenance_work_mem = '1GB'"))
        conn.execute(text("SET LOCAL work_mem = '256MB'"))
        again = _drop_indexes(conn)
        conn.execute(text("CREATE TEMP TABLE bench_slos (n int, id text) ON COMMIT DROP"))
        conn.execute(
            text(
                "INSERT INTO bench_slos SELECT n, (CAST(:ids AS text[]))[n] FROM generate_series(1, :k) AS n"
            ),
            {"ids": list(ids), "k": len(ids)},
        )
        conn.execute(text("SELECT setseed(0.7)"))
        ends = [e for h in sorted(raw_hours) for e in _ends(h, now)]
        for i in range(0, len(ends), 20):  # 20 scrape instants (5 minutes) per statement
            conn.execute(
                text(
                    "INSERT INTO event_slices (slo_id, endpoint, origin, source, start, "
                    '"end", good, total, exact) '
                    "SELECT id, 'ep', 'server', 'server', e - 15, e, "
                    "t - CAST(random() < 0.01 AS int), t, true "
                    "FROM (SELECT s.id, s.n, e, floor(random() * 36) + 5 + 0 * s.n AS t "
                    "      FROM unnest(CAST(:ends AS float8[])) AS e CROSS JOIN bench_slos s) r "
                    "ORDER BY e, n"
                ),
                {"ends": ends[i : i + 20]},
            )
        conn.execute(
            text(
                "CREATE TEMP TABLE bench_raw ON COMMIT DROP AS "
                'SELECT slo_id, ceil("end" / 3600) * 3600 AS hour_end, sum(good) AS good, '
                "sum(total) AS total FROM event_slices GROUP BY 1, 2"
            )
        )
        raw = {float(h) for h in raw_hours}
        for h in hours:
            if h in raw:
                conn.execute(
                    text(
                        "INSERT INTO slice_rollups SELECT slo_id, hour_end, good, total "
                        "FROM bench_raw WHERE hour_end = :h ORDER BY slo_id"
                    ),
                    {"h": h},
                )
            else:
                conn.execute(
                    text("INSERT INTO slice_rollups SELECT id, :h, 9990, 10000 FROM bench_slos ORDER BY n"),
                    {"h": h},
                )
        loaded = time.perf_counter() - t0
        for statement in again:
            conn.execute(text(statement))
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    counts = [store.engine.connect().execute(text(f"SELECT count(*) FROM {t}")).scalar() for t in TABLES]
    print(
        f"loaded {counts[0]:,} slices and {counts[1]:,} hourly rollups of {len(ids):,} SLOs in PostgreSQL "
        f"({loaded:.0f} s, indexes and VACUUM ANALYZE {time.perf_counter() - t0 - loaded:.0f} s)"
    )


def _ends(hour_end: float, now: float) -> list[float]:
    """The 15 s slice ends in ``(hour_end − 1h, min(hour_end, now)]``."""
    out, end = [], hour_end - HOUR + SCRAPE
    while end <= min(hour_end, now):
        out.append(end)
        end += SCRAPE
    return out


def loaded(store: Store, n: int) -> bool:
    """Whether the store already holds a load of ``n`` SLOs (``M3MON_BENCH_REUSE``)."""
    with store.engine.connect() as conn:  # the load's last SLO has rollups, the next one none
        got = conn.execute(
            text("SELECT slo_id FROM slice_rollups WHERE slo_id IN (:last, :next) GROUP BY slo_id"),
            {"last": f"class-{(n - 1) // 5}/slo-{(n - 1) % 5}", "next": f"class-{n // 5}/slo-{n % 5}"},
        ).all()
    return [r[0] for r in got] == [f"class-{(n - 1) // 5}/slo-{(n - 1) % 5}"]


def reset(store: Store, now: float) -> None:
    """Undo what a bench run wrote after the load: slices after ``now``, the open hour's rollup
    (back to its raw slices' sum), evaluations and progress marks."""
    top = (now // HOUR) * HOUR + HOUR
    with store.engine.begin() as conn:
        conn.execute(text('DELETE FROM event_slices WHERE "end" > :now'), {"now": now})
        conn.execute(text("DELETE FROM slice_rollups WHERE hour_end > :top"), {"top": top})
        conn.execute(
            text(
                "UPDATE slice_rollups r SET good = s.good, total = s.total FROM ("
                'SELECT slo_id, sum(good) AS good, sum(total) AS total FROM event_slices WHERE "end" > :lo '
                "GROUP BY slo_id) s WHERE r.slo_id = s.slo_id AND r.hour_end = :top"
            ),
            {"lo": top - HOUR, "top": top},
        )
        conn.execute(text("TRUNCATE evaluations, evaluation_progress"))
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE event_slices, slice_rollups, evaluations, evaluation_progress"))
