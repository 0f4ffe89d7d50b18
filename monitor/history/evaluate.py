"""Stored evaluations over a generated history, by the real evaluator, fast.

:func:`monitor.slo.evaluate.evaluate_counts` evaluates every window of an SLO at one instant from a
:data:`~monitor.slo.evaluate.Counter`. The service's counter asks the database for each window
(three queries); for the thousands of instants of a week that is minutes. :class:`SliceCounter`
reads the store's event slices once and answers each window from prefix sums over their end times,
with the store's window rule (slices ending in ``(start, end]``), so it gives the same counts as
:class:`monitor.store.counts.EventCounts` on a store whose raw slices are all kept.

History is evaluated every :data:`HISTORY_STEP` seconds (the service evaluates every minute): a
week is 2,016 instants per SLO. The burn alerts' short windows (5 minutes and more) are all covered.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from itertools import accumulate

from sqlalchemy import select

from monitor.history.write import insert_new
from monitor.model import Model
from monitor.slo.evaluate import evaluate_counts
from monitor.slo.windows import align
from monitor.store import Store
from monitor.store.ops import EVALUATION_KEY, evaluations_op
from monitor.store.tables import EvaluationRow, EventSliceRow

HISTORY_STEP = 600.0
#: Evaluations per write transaction.
CHUNK = 2000
#: Slices this far before the first instant are read too (the longest window: a 31-day month).
LOOKBACK = 32 * 86400.0


class SliceCounter:
    """``counts(slo_id, start, end)`` over the slices of ``(since, until]``, from memory."""

    def __init__(self, store: Store, since: float, until: float) -> None:
        s = EventSliceRow
        q = select(s.slo_id, s.end, s.good, s.total).where(
            s.end > since, s.end <= until, s.maintenance.is_(None)
        )
        rows: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        with store.session() as session:
            for slo_id, end, good, total in session.execute(q):
                rows[slo_id].append((end, good, total))
        self.ends: dict[str, list[float]] = {}
        self.good: dict[str, list[float]] = {}
        self.total: dict[str, list[float]] = {}
        for slo_id, items in rows.items():
            items.sort()
            self.ends[slo_id] = [e for e, _, _ in items]
            self.good[slo_id] = [0.0, *accumulate(g for _, g, _ in items)]
            self.total[slo_id] = [0.0, *accumulate(t for _, _, t in items)]

    def __call__(self, slo_id: str, start: float, end: float) -> tuple[float, float]:
        ends = self.ends.get(slo_id)
        if not ends or end <= start:
            return 0.0, 0.0
        i, j = bisect_right(ends, start), bisect_right(ends, end)
        return self.good[slo_id][j] - self.good[slo_id][i], self.total[slo_id][j] - self.total[slo_id][i]


def instants(start: float, end: float, step: float = HISTORY_STEP) -> list[float]:
    """Aligned evaluation instants in ``(start, end]``."""
    first = align(start, step) + step
    return [first + k * step for k in range(int((align(end, step) - first) // step) + 1)]


def evaluate_history(store: Store, model: Model, start: float, end: float, step: float = HISTORY_STEP) -> int:
    """Evaluate and store every SLO at every instant of ``(start, end]``; returns evaluations stored."""
    steps = instants(start, end, step)
    counter = SliceCounter(store, steps[0] - LOOKBACK if steps else start, end)
    done = 0
    for slo in model.slos:
        evaluations = [evaluate_counts(slo, at, counter) for at in steps]
        for i in range(0, len(evaluations), CHUNK):
            rows = evaluations_op(evaluations[i : i + CHUNK])["rows"]
            with store.session() as session:
                insert_new(session, EvaluationRow.__table__, rows, EVALUATION_KEY)  # type: ignore[arg-type]
        done += len(evaluations)
    return done
