"""Intervals that tile: the store derives every interval from consecutive stored readings.

The world is written here, independently of the store: a vLLM server finishes requests at known
instants (``World``), and a replica that scrapes at instant t reads a page whose counters hold
every request finished at or before t. Replicas write their readings through the real buffered
writer (each its own spool) into one SQLite store, in any order. What the store must hold:

* intervals (and gaps) that tile: sorted, each starting where the previous one ended, one ending
  at every stored reading but the first;
* exactly the events the server finished between the first and the last stored reading, counted
  once — never more (the HA pair double count of issue 22 held 400 where 300 happened);
* slices and hourly rollups that agree after every split.
"""

from __future__ import annotations

import itertools
import math
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from sqlalchemy import func, select

from monitor.conventions import STORE_READINGS, STORE_SCRAPE_GAPS
from monitor.model import Model, load_model
from monitor.scrape import read_text
from monitor.store import BufferedWriter, Store
from monitor.store.metrics import StoreMetrics
from monitor.store.migrate import upgrade
from monitor.store.readings import reading_op
from monitor.store.tables import (
    EventSliceRow,
    ScrapeGapRow,
    ScrapeIntervalRow,
    ScrapeReadingRow,
    SliceRollupRow,
)

SLO = "c/availability"
INTERVAL = 15.0
T0 = 1_767_571_200.0  # a whole hour


def _config(folder: Path, maintenance: str = "") -> Path:
    path = folder / "monitor.yaml"
    path.write_text(f"""version: m3mon/v1
endpoints:
  - {{name: ep, base_url: "http://ep:8000", model: m, classes: [c], scrape_interval: 15s}}
request_classes:
  - name: c
    max_context_tokens: 32768
    probes: [chat]
    slos: [{{name: availability, sli: availability, objective: 99, source: server}}]
storage: {{url: "sqlite:///{folder}/m3mon.db", buffer_dir: "{folder}/spool"}}
{maintenance}""")
    return path


@dataclass(frozen=True)
class World:
    """Requests finish every ``1/rate`` seconds from T0; every ``bad_every``-th one errors."""

    rate: float = 10.0
    bad_every: int = 7

    def finished(self, t: float) -> int:
        return max(0, math.floor((t - T0) * self.rate + 1e-9))

    def errors(self, t: float) -> int:
        return self.finished(t) // self.bad_every

    def between(self, a: float, b: float) -> tuple[int, int]:
        """(requests, errors) finished in (a, b]."""
        return self.finished(b) - self.finished(a), self.errors(b) - self.errors(a)

    def page(self, t: float) -> str:
        n, bad = self.finished(t), self.errors(t)
        base = 'engine="0",model_name="m"'
        return (
            "# HELP vllm:request_success_total Count of successfully processed requests.\n"
            "# TYPE vllm:request_success_total counter\n"
            f'vllm:request_success_total{{{base},finished_reason="stop"}} {float(n - bad)!r}\n'
            f'vllm:request_success_total{{{base},finished_reason="error"}} {float(bad)!r}\n'
        )


class Pair:
    """Two replicas' writers on one store; each scrape is a reading op of the replica's own."""

    def __init__(self, folder: Path, model: Model) -> None:
        self.model, self.store = model, Store(model.storage.url)
        self.registries = {r: CollectorRegistry() for r in ("a", "b")}
        self.writers = {
            r: BufferedWriter(
                self.store,
                folder / f"spool-{r}",
                metrics=StoreMetrics(self.registries[r]),
                model=lambda: model,
            )
            for r in ("a", "b")
        }

    def said(self, replica: str, name: str, **labels: str) -> float | None:
        """A sample of the replica's own ``/metrics`` (its StoreMetrics registry)."""
        return self.registries[replica].get_sample_value(name, labels)

    def op(self, world: World, t: float, replica: str) -> dict[str, object]:
        reading = read_text(world.page(t), at=t)
        return reading_op("ep", reading, math.floor(t / INTERVAL), replica)

    def write(self, replica: str, op: dict[str, object]) -> None:
        assert self.writers[replica].submit(op)

    def tiles(self, pruned: bool = False) -> list[tuple[float, float, str]]:
        with self.store.session() as s:
            intervals = [
                (a, b, "interval")
                for a, b in s.execute(select(ScrapeIntervalRow.start, ScrapeIntervalRow.end))
            ]
            gaps = [(a, b, "gap") for a, b in s.execute(select(ScrapeGapRow.start, ScrapeGapRow.end))]
            readings = sorted(s.scalars(select(ScrapeReadingRow.time)))
        spans = sorted(intervals + gaps)
        ends = [b for _, b, _ in spans]
        assert ends == (readings if pruned else readings[1:]), (
            "one interval or gap ends at every reading but the first"
        )
        assert all(x[1] == y[0] for x, y in itertools.pairwise(spans)), f"intervals do not tile: {spans}"
        return spans

    def counted(self) -> tuple[float, float]:
        """(valid, bad) of the counted slices (not excluded by maintenance); the rollups agree."""
        e = EventSliceRow
        with self.store.session() as s:
            good, total = s.execute(
                select(func.sum(e.good), func.sum(e.total)).where(e.maintenance.is_(None))
            ).one()
            r_good, r_total = s.execute(
                select(func.sum(SliceRollupRow.good), func.sum(SliceRollupRow.total))
            ).one()
        good, total = float(good or 0), float(total or 0)
        assert (float(r_good or 0), float(r_total or 0)) == pytest.approx((good, total)), "rollups = slices"
        return total, total - good

    def close(self) -> None:
        self.store.close()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    model = load_model(_config(tmp_path))
    upgrade(model.storage.url)
    p = Pair(tmp_path, model)
    yield p
    p.close()


def test_a_replicas_failed_scrape_is_filled_by_its_partner_not_counted_twice(pair: Pair) -> None:
    """Issue 22 finding 1: A fails slot k, B writes slot k, A's next reading arrives first for
    slot k+1. The old store kept (985,1000] (1000.01,1015.01] and A's (985,1015]: 400 where 300."""
    w = World(rate=10.0)
    a0, b0 = T0 + 985.0, T0 + 985.01
    k_b = T0 + 1000.01  # A's scrape of slot k failed
    k1_a, k1_b = T0 + 1015.0, T0 + 1015.01
    pair.write("a", pair.op(w, a0, "a"))
    pair.write("b", pair.op(w, b0, "b"))  # same slot as a0: a duplicate, dropped
    pair.write("b", pair.op(w, k_b, "b"))
    pair.write("a", pair.op(w, k1_a, "a"))  # continues B's reading at k, not A's at k-1
    pair.write("b", pair.op(w, k1_b, "b"))  # slot k+1 is A's: dropped
    assert pair.tiles() == [(a0, k_b, "interval"), (k_b, k1_a, "interval")]
    assert pair.counted() == w.between(a0, k1_a)
    assert pair.counted()[0] == 300  # 300 requests happened in (985, 1015]
    # each replica says what it kept and what its partner had stored already
    for replica, kept in (("a", [2.0, 0.0]), ("b", [1.0, 2.0])):
        assert [pair.said(replica, STORE_READINGS, result=r) for r in ("new", "duplicate")] == kept


def test_a_late_reading_splits_the_interval_it_falls_in(pair: Pair) -> None:
    """B's reading of slot k replayed after A's k-1 and k+1 (A failed k): the interval (k-1, k+1]
    is split at B's reading, and the events of each half are where they happened."""
    w = World(rate=4.0, bad_every=3)
    first, middle, last = T0 + 30.0, T0 + 45.02, T0 + 60.0
    pair.write("a", pair.op(w, first, "a"))
    pair.write("a", pair.op(w, last, "a"))
    assert pair.tiles() == [(first, last, "interval")]
    pair.write("b", pair.op(w, middle, "b"))
    assert pair.tiles() == [(first, middle, "interval"), (middle, last, "interval")]
    with pair.store.session() as s:
        by_end = dict(s.execute(select(EventSliceRow.end, EventSliceRow.total)).all())
    assert by_end == {middle: w.between(first, middle)[0], last: w.between(middle, last)[0]}
    assert pair.counted() == w.between(first, last)


def test_readings_further_apart_than_the_gap_limit_are_a_gap_counted_nowhere(pair: Pair) -> None:
    w = World(rate=1.0, bad_every=2)
    before, after = T0 + 15.0, T0 + 15.0 + 3600.0 + 15.0  # both replicas failed for over an hour
    later = after + 15.0
    for t in (before, after, later):
        pair.write("a", pair.op(w, t, "a"))
    assert pair.tiles() == [(before, after, "gap"), (after, later, "interval")]
    assert pair.counted() == w.between(after, later)
    with pair.store.session() as s:
        assert s.scalar(select(ScrapeGapRow.requests)) == w.between(before, after)[0]
    assert pair.said("a", STORE_SCRAPE_GAPS) == 1.0  # the gap is visible on the replica's /metrics
    assert pair.said("a", STORE_READINGS, result="new") == 3.0


def test_a_reading_inside_an_interval_whose_first_reading_is_gone_is_dropped(pair: Pair) -> None:
    w = World()
    pair.write("a", pair.op(w, T0 + 15.0, "a"))
    pair.write("a", pair.op(w, T0 + 45.0, "a"))
    with pair.store.session() as s:
        s.execute(ScrapeReadingRow.__table__.delete().where(ScrapeReadingRow.time == T0 + 15.0))
    pair.write("b", pair.op(w, T0 + 30.0, "b"))  # would split (15, 45], whose start is no longer kept
    assert pair.tiles(pruned=True) == [(T0 + 15.0, T0 + 45.0, "interval")]
    assert pair.counted() == w.between(T0 + 15.0, T0 + 45.0)


def test_a_maintenance_window_excludes_the_interval_that_straddles_its_end(tmp_path: Path) -> None:
    """docs/maintenance.md: an interval that overlaps an occurrence is excluded whole, so errors of
    (last scrape before the end, end] do not land after the window."""
    start, end = "2026-01-05T00:01:00+00:00", "2026-01-05T00:02:00+00:00"  # T0 + 60 .. T0 + 120
    window = f"maintenance:\n  - {{name: m, start: '{start}', end: '{end}', classes: [c]}}\n"
    model = load_model(_config(tmp_path, window))
    upgrade(model.storage.url)
    pair = Pair(tmp_path, model)
    w = World(rate=2.0, bad_every=1)  # every request errors
    times = [T0 + 52.0, T0 + 67.0, T0 + 112.0, T0 + 127.0, T0 + 142.0]  # phase 7 s
    for t in times:
        pair.write("a", pair.op(w, t, "a"))
    with pair.store.session() as s:
        rows = s.execute(select(EventSliceRow.end, EventSliceRow.maintenance)).all()
    pair.close()
    # (52, 67], (67, 112] and (112, 127] overlap (60, 120]; (127, 142] is the first after the window
    assert sorted(rows) == [(times[1], "m"), (times[2], "m"), (times[3], "m"), (times[4], None)]
    assert pair.counted() == w.between(times[3], times[4]) == (30, 30)


Schedule = list[tuple[str, float]]


@st.composite
def schedules(draw: st.DrawFn) -> tuple[Schedule, list[int]]:
    """Both replicas scrape every slot a few ms apart, each failing some; then a write order that
    keeps each replica's own order (a spool replays in order) and interleaves them freely."""
    slots = draw(st.integers(3, 14))
    phase = draw(st.floats(0.0, 14.0))
    scrapes: dict[str, list[float]] = {"a": [], "b": []}
    for k in range(slots):
        for replica, skew in (("a", 0.0), ("b", draw(st.floats(0.001, 0.2)))):
            if draw(st.booleans()) or draw(st.booleans()):  # each scrape fails with probability 1/4
                scrapes[replica].append(T0 + 600.0 + k * INTERVAL + phase + skew)
    order = draw(st.permutations([r for r, ts in scrapes.items() for _ in ts]))
    cursor = {"a": iter(scrapes["a"]), "b": iter(scrapes["b"])}
    return [(r, next(cursor[r])) for r in order], [len(scrapes["a"]), len(scrapes["b"])]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated database file that each example copies (migrating costs more than the example)."""
    folder = tmp_path_factory.mktemp("template")
    upgrade(load_model(_config(folder)).storage.url)
    return folder / "m3mon.db"


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(plan=schedules())
def test_any_failures_and_any_write_order_tile_and_count_each_event_once(
    tmp_path_factory: pytest.TempPathFactory, migrated: Path, plan: tuple[Schedule, list[int]]
) -> None:
    folder = tmp_path_factory.mktemp("pair")
    model = load_model(_config(folder))
    shutil.copy(migrated, folder / "m3mon.db")
    pair, w = Pair(folder, model), World(rate=7.0, bad_every=5)
    try:
        for replica, t in plan[0]:
            pair.write(replica, pair.op(w, t, replica))
        spans = pair.tiles()
        if spans:
            first, last = spans[0][0], spans[-1][1]
            assert pair.counted() == w.between(first, last)  # each event once, none invented
        else:
            assert pair.counted() == (0, 0)
    finally:
        pair.close()
