"""Running window sums: every SLO's window counts at the newest step from memory, advanced per step.

:class:`monitor.store.counts.EventCounts` answers a window with up to three SQL reads (raw head,
hourly rollups, raw tail), so one step of N SLOs costs ~25·N queries whatever changed. This
module keeps, per SLO, what those reads would sum, so one step costs one SQL statement for all
SLOs and reads only the slices that entered or left a window since the last step.

Per SLO, with ``at`` the step the state is at and ``⌊t⌋`` the hour boundary at or before ``t``:

* ``cum``: cumulative hourly rollups, ``cum(h)`` = events of counted slices ending in
  ``(base, h]`` for every hour boundary ``h`` of the last :data:`KEEP_HOURS` (32 days: the month,
  the 30-day period, their ragged hours);
* ``now``: events of slices ending in ``(⌊at⌋, at]`` (the open hour);
* ``heads[L]``: for each rolling window length ``L``, events of slices ending in
  ``(⌊at − L⌋, at − L]``.

With ``R(t) = cum(⌊t⌋) + (events ending in (⌊t⌋, t])``, the events of a window ``(at − L, at]``
are ``R(at) − R(at − L)`` — what EventCounts sums, term by term. Calendar windows start on an
hour boundary (no head). When the raw head was pruned (``at − L`` before the horizon), the head
term is 0 and the whole hour comes from the rollup, EventCounts' documented widening.

The sums of every SLO are held column-wise (numpy): ``cum`` is one matrix, a row per SLO and a
column per hour boundary, the hours shared by all SLOs (every tracked SLO is at the same step);
``now`` and ``heads`` are matrices too. A window of every SLO at the step is then a few array
reads (:meth:`RunningCounts.columns`), not one Python lookup per SLO and window.

:meth:`RunningCounts.advance` moves the state from ``at`` to a later step with one
``UNION ALL`` over the slices ending in ``(at, at']`` (by SLO and hour: the open hour, and the
hours it completes) and, per window length, those ending in ``(at − L, at' − L]`` (by SLO). The
state is only as good as what was read: a slice written later at or before an evaluated step
marks its SLO dirty (:mod:`monitor.store.progress`), and the evaluator then forgets the SLO
(:meth:`RunningCounts.forget`), which is rebuilt from the rollups on its next step.

Memory: ~820 hours × (good, total) of float64 per SLO plus a few sums, ~13 KB per SLO.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from monitor.store.counts import HOUR, pruned_before
from monitor.store.running_reads import Floats, Ints, pg_range_sums, range_sums, rollups

#: Hours of cumulative rollups kept per SLO: a calendar month (31 days) plus the ragged hours.
KEEP_HOURS = 32 * 24
#: Trim the cumulative columns once they are this many hours longer than KEEP_HOURS.
TRIM = 48
#: SLO ids per ``IN (...)`` list (SQLite limits bound parameters).
CHUNK = 500
#: A rebuild of more SLOs than this reads every SLO's raw heads in one statement (see _rebuild).
SCAN_ALL = CHUNK

#: what a window start reads at a step: hour numbers of R(end) and R(start), and the head
Plan = tuple[int, int, float | Literal[False] | None]


def floor_hour(t: float) -> float:
    return math.floor(t / HOUR) * HOUR


def hour_number(boundary: float) -> int:
    """An hour boundary as its hour number (boundary / HOUR, rounded against float error)."""
    return round(boundary / HOUR)


class RunningCounts:
    """Every tracked SLO's window sums at one step, ``at`` (see the module docstring)."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.lengths: frozenset[float] = frozenset()
        self.horizon = 0.0
        self.scan_all = SCAN_ALL
        #: per window start at the current step: what it reads (:meth:`_plan`), shared by every SLO
        self._plans: dict[float, Plan] = {}
        self._clear()

    def _clear(self) -> None:
        self._rows: dict[str, int] = {}  # SLO id -> its row
        self._ids: list[str | None] = []  # row -> its SLO id (None: free)
        self._free: list[int] = []  # rows of forgotten SLOs, reused by the next rebuild
        self._order: dict[float, int] = {}  # window length -> its heads column
        self.first = 0  # the hour number of cum's column 0 (shared by every row)
        self.cols = 0  # cum's columns in use: hours first … first + cols − 1
        self.cum: Floats = np.zeros((0, KEEP_HOURS + 1 + TRIM, 2))  # [row, hour, good|total]
        self.base: Ints = np.zeros(0, dtype=np.int64)  # per row: the hour number its cum starts after
        self.now: Floats = np.zeros((0, 2))
        self.heads: Floats = np.zeros((0, 0, 2))  # [row, window length, good|total]

    def memory(self) -> int:
        """Bytes held by the tracked SLOs' sums (the arrays and the id map, not the ids)."""
        arrays = (self.cum, self.base, self.now, self.heads)
        return sum(a.nbytes for a in arrays) + 2 * 8 * len(self._rows) + 8 * len(self._free)

    def forget(self, slo_ids: Iterable[str] | None = None) -> None:
        """Drop SLOs whose sums can no longer be trusted (all when ``slo_ids`` is None)."""
        if slo_ids is None:
            self._clear()
            self.at = None
            return
        for slo_id in slo_ids:
            row = self._rows.pop(slo_id, None)
            if row is not None:
                self._free.append(row)
                self._ids[row] = None

    def advance(self, session: Session, at: float, slo_ids: Sequence[str], lengths: Iterable[float]) -> None:
        """Bring ``slo_ids`` to step ``at`` (window lengths ``lengths``); SLOs not tracked yet, or
        all of them when ``at`` is not after the state's step, are rebuilt from the store. SLOs
        tracked but not in ``slo_ids`` are forgotten: they were not read up to ``at``."""
        lengths = frozenset(_key(n) for n in lengths)
        self.horizon = pruned_before(session)
        self._plans.clear()
        if self.at is None or at < self.at or lengths != self.lengths:
            self.forget()
        self.lengths = lengths
        wanted = set(slo_ids)
        self.forget([s for s in self._rows if s not in wanted])
        if self.at is not None and at > self.at and self._rows:
            self._step(session, self.at, at)
        self.at = at
        self._rebuild(session, [s for s in slo_ids if s not in self._rows])

    def counts(self, slo_id: str, start: float, end: float) -> tuple[float, float] | None:
        """(good, total) of slices ending in ``(start, end]`` when the state holds them; else None."""
        good, total, held = self.columns([slo_id], [start], end)
        return (float(good[0, 0]), float(total[0, 0])) if held[0, 0] else None

    def columns(
        self, slo_ids: Sequence[str], starts: Sequence[float], end: float
    ) -> tuple[Floats, Floats, NDArray[np.bool_]]:
        """(good, total, held) of every SLO (rows) and window ``(start, end]`` (columns): the sums
        where ``held``, anything where the state cannot answer (EventCounts reads those)."""
        n, w = len(slo_ids), len(starts)
        good, total, held = np.zeros((n, w)), np.zeros((n, w)), np.zeros((n, w), dtype=np.bool_)
        if end != self.at or n == 0:
            return good, total, held
        rows = np.fromiter((self._rows.get(s, -1) for s in slo_ids), dtype=np.int64, count=n)
        tracked = rows >= 0
        rows = np.where(tracked, rows, 0)
        for k, start in enumerate(starts):
            plan = self._plans.get(start)
            if plan is None:
                plan = self._plans[start] = self._plan(start, end)
            top, hour, head = plan
            i, j = top - self.first, hour - self.first
            if head is False or not (0 <= i < self.cols and 0 <= j < self.cols) or not len(self.cum):
                continue
            above = self.cum[rows, i] + self.now[rows]  # R(end)
            below = self.cum[rows, j]  # R(start) = cum(⌊start⌋) (+ the head's slices)
            if head is not None:
                below = below + self.heads[rows, self._order[head]]
            sums = above - below
            good[:, k], total[:, k] = sums[:, 0], sums[:, 1]
            held[:, k] = tracked & (self.base[rows] <= hour)
        return good, total, held

    def _plan(self, start: float, end: float) -> Plan:
        """What a window ``(start, end]`` at this step reads, the same for every SLO: the hour
        numbers of R(end) and of R(start), and its head — a window length (``heads`` key), None
        when R(start) is the hour's cum alone (an hour boundary, or a pruned raw head whose whole
        hour comes from the rollup), False when the state cannot answer (EventCounts reads it)."""
        hour = floor_hour(start)
        head: float | Literal[False] | None = _key(end - start)
        if start == hour:
            head = None
        elif start < self.horizon:  # raw head pruned: its whole hour comes from the rollup
            head = None if floor_hour(end) > hour + HOUR else False
        elif hour < self.horizon or head not in self._order:  # a head hour pruned in part (or an
            # unknown length): EventCounts reads it
            head = False
        return hour_number(floor_hour(end)), hour_number(hour), head

    # --- advancing ------------------------------------------------------------------------

    def _step(self, session: Session, before: float, at: float) -> None:
        """Advance every tracked SLO from ``before`` to ``at``."""
        ranges = [(0.0, before, at)]
        for length in sorted(self.lengths):
            lo, hi = before - length, at - length
            ranges.append((length, max(lo, floor_hour(hi)), hi))
        labels, rows, hours, sums = self._read(session, ranges, None)
        new = labels == 0.0
        last, top = self.first + self.cols - 1, hour_number(floor_hour(at))
        number = np.rint(hours / HOUR).astype(np.int64)
        if top > last:  # the open hour and any hours after it are complete: new cum columns
            added = np.zeros((len(self.cum), top - last, 2))
            added[:, 0] = self.now  # the open hour's events read at earlier steps
            closed = new & (number <= top)
            np.add.at(added, (rows[closed], number[closed] - last - 1), sums[closed])
            previous = self.cum[:, self.cols - 1 : self.cols]  # summed in order: (cum + h1) + h2 …
            self._append(np.cumsum(np.concatenate([previous, added], axis=1), axis=1)[:, 1:])
            self.now = np.zeros_like(self.now)
        opened = new & (number == top + 1)
        np.add.at(self.now, rows[opened], sums[opened])
        for length, column in self._order.items():
            if floor_hour(before - length) != floor_hour(at - length):  # the head moved to a new hour
                self.heads[:, column] = 0.0
            part = labels == length
            np.add.at(self.heads[:, column], rows[part], sums[part])

    def _append(self, columns: Floats) -> None:
        """Append completed hours' cum columns; drop hours older than KEEP_HOURS once TRIM more."""
        k = columns.shape[1]
        if self.cols + k <= self.cum.shape[1]:
            self.cum[:, self.cols : self.cols + k] = columns
            self.cols += k
            return
        keep = KEEP_HOURS + 1
        merged = np.concatenate([self.cum[:, : self.cols], columns], axis=1)[:, -keep:]
        self.first += self.cols + k - keep
        self.cum[:, :keep] = merged
        self.cols = keep

    # --- rebuilding -------------------------------------------------------------------------

    def _rebuild(self, session: Session, slo_ids: Sequence[str]) -> None:
        """Build ``slo_ids``' sums at ``self.at`` from the rollups and the raw ragged hours."""
        if not slo_ids:
            return
        assert self.at is not None
        at, top = self.at, floor_hour(self.at)
        base = top - KEEP_HOURS * HOUR
        self._layout(hour_number(base), hour_number(top))
        rows = self._allocate(slo_ids)
        ranges = [(0.0, top, at)] + [(n, floor_hour(at - n), at - n) for n in sorted(self.lengths)]
        # Many SLOs (a start): every SLO's raw heads in one pass over each range through the
        # ``end`` index (contiguous pages), not one index probe per SLO and range, chunk by chunk.
        every = self._read(session, ranges, None) if len(slo_ids) > self.scan_all else None
        self.now[rows] = 0.0
        self.heads[rows] = 0.0
        for i in range(0, len(slo_ids), CHUNK):
            chunk, chunk_rows = slo_ids[i : i + CHUNK], rows[i : i + CHUNK]
            self._rebuild_hours(session, chunk, chunk_rows, base, top)
            if every is None:
                self._place_heads(self._read(session, ranges, chunk), chunk_rows)
        if every is not None:
            self._place_heads(every, rows)

    def _place_heads(self, read: tuple[Floats, Ints, Floats, Floats], rows: Ints) -> None:
        """Set ``now`` and ``heads`` of ``rows`` from :meth:`_read`'s rows (one per SLO and label)."""
        labels, at_rows, _, sums = read
        mine = np.zeros(len(self.cum), dtype=np.bool_)
        mine[rows] = True
        keep = mine[at_rows]
        labels, at_rows, sums = labels[keep], at_rows[keep], sums[keep]
        now = labels == 0.0
        self.now[at_rows[now]] = sums[now]
        lengths = np.array(sorted(self._order), dtype=np.float64)
        column = np.searchsorted(lengths, labels[~now])
        self.heads[at_rows[~now], column] = sums[~now]

    def _layout(self, base: int, top: int) -> None:
        """The shared hour columns at a rebuild: set up when nothing is tracked; else they end at
        ``top`` already (every tracked SLO is at the same step)."""
        if not self._rows:
            self._clear()
            self._order = {n: k for k, n in enumerate(sorted(self.lengths))}
            self.heads = np.zeros((0, len(self._order), 2))
            self.first, self.cols = base, top - base + 1
        assert self.first + self.cols - 1 == top and self.first <= base, "running sums off their step"

    def _allocate(self, slo_ids: Sequence[str]) -> Ints:
        """Rows for ``slo_ids``: forgotten SLOs' rows first, then new ones (the arrays grown)."""
        reused = [self._free.pop() for _ in range(min(len(self._free), len(slo_ids)))]
        start = len(self.cum)  # every row is tracked or free: new ones go after them
        fresh = list(range(start, start + len(slo_ids) - len(reused)))
        if fresh:
            need = start + len(fresh)
            self.cum, self.base = _grown(self.cum, need), _grown(self.base, need)
            self.now, self.heads = _grown(self.now, need), _grown(self.heads, need)
        rows = reused + fresh
        self._rows.update(zip(slo_ids, rows, strict=True))
        self._ids.extend([None] * (len(self.cum) - len(self._ids)))
        for slo_id, row in zip(slo_ids, rows, strict=True):
            self._ids[row] = slo_id
        return np.array(rows, dtype=np.int64)

    def _rebuild_hours(
        self, session: Session, slo_ids: Sequence[str], rows: Ints, base: float, top: float
    ) -> None:
        """cum of ``rows`` from the rollups in ``(base, top]``: zero at ``base`` and before."""
        start = hour_number(base)
        hours = np.zeros((len(rows), hour_number(top) - start, 2))
        where, ends, goods, totals = rollups(session, slo_ids, base, top)
        column = np.rint(ends / HOUR).astype(np.int64) - start - 1
        hours[where, column, 0] = goods
        hours[where, column, 1] = totals
        offset = start - self.first
        self.cum[rows] = 0.0
        self.cum[rows, offset + 1 : self.cols] = np.cumsum(hours, axis=1)
        self.base[rows] = start

    # --- reading the store ----------------------------------------------------------------

    def _read(
        self, session: Session, ranges: Sequence[tuple[float, float, float]], slo_ids: Sequence[str] | None
    ) -> tuple[Floats, Ints, Floats, Floats]:
        """:func:`~monitor.store.running_reads.range_sums` of the tracked SLOs as arrays: labels, rows,
        hour ends, (good, total)."""
        if session.get_bind().dialect.name == "postgresql":  # the server finds each SLO's row
            labels, found, hours, good, total = pg_range_sums(session, ranges, slo_ids, self._ids)
            rows = np.asarray(found, dtype=np.int64)
        else:
            labels, ids, hours, good, total = range_sums(session, ranges, slo_ids)
            get = self._rows.get
            rows = np.fromiter((get(s, -1) for s in ids), dtype=np.int64, count=len(ids))
        mine = rows >= 0
        sums = np.stack([np.asarray(good, dtype=np.float64), np.asarray(total, dtype=np.float64)], axis=-1)
        hour_ends = np.asarray(hours, dtype=np.float64)
        return np.asarray(labels, dtype=np.float64)[mine], rows[mine], hour_ends[mine], sums[mine]


def _grown(a: NDArray[Any], n: int) -> NDArray[Any]:
    """``a`` with zero rows after its own up to ``n`` (one allocation, its pages zeroed lazily)."""
    out = np.zeros((n, *a.shape[1:]), dtype=a.dtype)
    out[: len(a)] = a
    return out


def _key(length: float) -> float:
    """A window length as a dictionary key (``at − (at − L)`` can differ from L in the last bit)."""
    return round(length, 3)
