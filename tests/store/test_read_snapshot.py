"""An evaluation step reads one snapshot: a write committed between its reads changes nothing.

The evaluator reads a step's counts in several statements: the running sums are rebuilt from the
hourly rollups, then the raw slices of the open hour and the windows' heads; the per-window
evaluator reads a raw head, the rollups, then a raw tail. Under PostgreSQL's default READ
COMMITTED each statement sees what was committed when *it* started (and SQLite's driver runs each
SELECT outside a transaction, the same), so a write that commits between two of them is half seen. The write here is the store's own interval split (a late
reading between two readings): it takes out the slice of ``(H − 100, H + 100]`` (10 events,
ending in the open hour) and adds its halves, 4 events ending at ``H − 50`` (a closed hour, read
from its rollup) and 6 ending at ``H + 100``. It commits right after the rollup read; the raw read
then sees the halves and the rollup read saw neither: 6 events where 10 happened, before or after
the split. Independent check: the events the slices hold, before and after, are both 10.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

import pytest
from sqlalchemy import event

from monitor.model import SLO
from monitor.slo.slices import EventSlice
from monitor.slo.windows import rolling_lengths
from monitor.store import Store
from monitor.store.rows import remove_server_slices, write_slices

H = 1_769_904_000.0  # an hour boundary
AT = H + 120.0  # the step: two minutes into the open hour
DAY = 86400.0
SLO_ = SLO("chat", "availability", "availability", 0.99, 30 * DAY, "server")


def _slice(start: float, end: float, total: float) -> EventSlice:
    return EventSlice(SLO_.id, "ep-a", "server", start, end, total, total, "server")


def _split(other: Store) -> None:
    """What a late reading at ``H − 50`` does to the interval ``(H − 100, H + 100]``."""
    with other.session() as s:
        remove_server_slices(s, "ep-a", H + 100)
        write_slices(s, [asdict(_slice(H - 100, H - 50, 4.0)), asdict(_slice(H - 50, H + 100, 6.0))])


@pytest.fixture
def stores(store: Store) -> Iterator[tuple[Store, Store]]:
    with store.session() as s:  # and 3 events just before the day window: its head is not empty
        write_slices(
            s, [asdict(_slice(H - 100, H + 100, 10.0)), asdict(_slice(AT - DAY - 20, AT - DAY - 10, 3.0))]
        )
    other = Store(store.url)
    try:
        yield store, other
    finally:
        other.close()


def _after_rollups(store: Store, other: Store) -> None:
    """Commit the split (through another connection) right after the step's first rollup read."""
    done: list[bool] = []

    def hook(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if not done and "slice_rollups" in statement and statement.lstrip().upper().startswith("SELECT"):
            done.append(True)
            _split(other)

    event.listen(store.engine, "after_cursor_execute", hook)


@pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)
def test_the_running_sums_read_one_snapshot(stores: tuple[Store, Store]) -> None:
    store, other = stores
    _after_rollups(store, other)
    with store.step_counter(AT, [SLO_.id], rolling_lengths([SLO_])) as counts:
        _, total = counts(SLO_.id, AT - DAY, AT)
        held = store.running.counts(SLO_.id, AT - DAY, AT)
    assert held is not None, "the running sums did not answer the window: the test shows nothing"
    assert total == 10.0, f"the step read {total:g} events where the slices held 10 before and after"


@pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)
def test_the_window_evaluator_reads_one_snapshot(stores: tuple[Store, Store]) -> None:
    store, other = stores
    _after_rollups(store, other)
    with store.counter() as counts:
        _, total = counts(SLO_.id, AT - DAY + 30, AT)  # a raw head, whole hours, a raw tail
    assert total == 10.0, f"the window read {total:g} events where the slices held 10 before and after"
