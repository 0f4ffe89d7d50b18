"""Keeping stored evaluations current: evaluate every step that is due, backfilling after downtime.

Evaluation instants are aligned to ``step`` seconds (60 s: on the minute). :func:`evaluate_due`
asks the store for the last stored instant of each SLO and evaluates every missed step up to
``now``, oldest first, but never further back than ``max_backfill`` (24 h) and at most
``max_steps`` steps per SLO per call, so a long outage is caught up over a few calls instead of
stalling one. A step is evaluated :data:`SETTLE` seconds after its instant, never earlier.

A step is final only once the store holds its events: the caller passes as ``now`` the horizon
up to which every writer's events are in (its own spool, and in a fleet every live replica's,
:mod:`monitor.store.progress`). A write that still lands later (a replica's spool replayed after
the bound) marks the SLO **dirty** from its event time, and the next call evaluates those steps
again and replaces them (:func:`redo_steps`): late events are never lost. The evaluator announces
how far it evaluates before it reads any count, so no write can slip between.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NamedTuple, Protocol, overload

from monitor.model import SLO, Model
from monitor.slo.columns import ColumnCounter, StepEvaluations, evaluate_columns
from monitor.slo.evaluate import Counter, SLOEvaluation, evaluate_counts
from monitor.slo.windows import align, rolling_lengths

STEP = 60.0
#: A step is evaluated only this long after its instant. Events happen when their outcome is known
#: (a probe's completion, docs/slo-events.md), so a probe still in flight at the step belongs to a
#: later one; what a step must wait for is the write of results completed just before it.
SETTLE = 5.0
MAX_BACKFILL = 86400.0
MAX_STEPS = 240


@dataclass(frozen=True)
class Dirty:
    """Counts changed after their steps were evaluated (a late write): from ``since`` on, the
    steps are evaluated again. ``version`` tells a newer mark from the one that was read."""

    slo_id: str
    since: float
    version: int


class EvaluationStore(Protocol):
    """What :func:`evaluate_due` needs from a store (the SQL store implements it)."""

    def counter(self) -> AbstractContextManager[Counter]:
        """A :data:`~monitor.slo.evaluate.Counter` valid inside the ``with`` block (one read session)."""
        ...

    def step_counter(
        self, at: float, slo_ids: Sequence[str], lengths: Iterable[float]
    ) -> AbstractContextManager[ColumnCounter]:
        """Counts of windows of ``slo_ids`` ending at ``at`` (rolling lengths ``lengths``), one or
        column-wise, kept incrementally between calls (:mod:`monitor.store.running`)."""
        ...

    def forget_running(self, slo_ids: Sequence[str] | None = None) -> None:
        """The running sums of ``slo_ids`` (None: all) can no longer be trusted."""
        ...

    def last_evaluated(self, slo_ids: Sequence[str]) -> dict[str, float]:
        """The newest stored instant of each SLO that has one."""
        ...

    def save_evaluations(self, evaluations: Sequence[SLOEvaluation], replace: bool = False) -> int: ...

    def announce(self, until: Mapping[str, float]) -> None:
        """Commit that each SLO is evaluated up to ``until[slo]`` before any count is read: a write
        committed later marks the steps it changes dirty."""
        ...

    def dirty(self, slo_ids: Sequence[str]) -> list[Dirty]: ...

    def advance_dirty(self, mark: Dirty, since: float | None) -> None:
        """Move ``mark`` on to ``since`` (None: clear it), unless a newer mark arrived."""
        ...


def due_steps(
    last: float | None,
    now: float,
    step: float = STEP,
    max_backfill: float = MAX_BACKFILL,
    max_steps: int = MAX_STEPS,
) -> list[float]:
    """Aligned instants after ``last`` up to ``now``, bounded by ``max_backfill`` and ``max_steps``."""
    newest = align(now, step)
    oldest = align(now - max_backfill, step) + step
    # A never-evaluated SLO starts at the current step: there is nothing it missed.
    first = newest if last is None else max(oldest, align(last, step) + step)
    return _steps(first, newest, step, max_steps)


def _steps(first: float, last: float, step: float, limit: int) -> list[float]:
    """``first``, ``first + step`` … up to ``last``, at most ``limit`` of them."""
    count = int((last - first) // step) + 1 if last >= first else 0
    return [first + i * step for i in range(min(count, limit))]


def redo_steps(
    mark: Dirty | None,
    last: float | None,
    now: float,
    step: float = STEP,
    max_backfill: float = MAX_BACKFILL,
    max_steps: int = MAX_STEPS,
) -> list[float]:
    """Evaluated instants at or after a dirty mark (each window ending there holds the changed
    events), oldest first, within ``max_backfill`` and ``max_steps``."""
    if mark is None or last is None:
        return []
    first = max(math.ceil(mark.since / step) * step, align(now - max_backfill, step) + step)
    return _steps(first, min(last, align(now, step)), step, max_steps)


class _Plan(NamedTuple):  # a tuple: 50,000 of them are made at every step
    slo: SLO
    redo: list[float]
    new: list[float]
    mark: Dirty | None
    last: float | None
    slo_id: str


def _plans(
    store: EvaluationStore, model: Model, now: float, step: float, backfill: float, limit: int
) -> list[_Plan]:
    ids = [s.id for s in model.slos]
    marks = {d.slo_id: d for d in store.dirty(ids)}
    lasts = store.last_evaluated(ids)
    # most SLOs were last evaluated at the same instant: their due steps are computed once
    due: dict[float | None, list[float]] = {}
    out = []
    for slo, slo_id in zip(model.slos, ids, strict=True):
        last, mark = lasts.get(slo_id), marks.get(slo_id)
        redo = redo_steps(mark, last, now, step, backfill, limit) if mark is not None else []
        new = due.get(last)
        if new is None:
            new = due[last] = due_steps(last, now, step, backfill, limit)
        if redo or new or mark is not None:
            out.append(_Plan(slo, redo, new, mark, last, slo_id))
    return out


def evaluate_due(
    store: EvaluationStore,
    model: Model,
    now: float,
    step: float = STEP,
    max_backfill: float = MAX_BACKFILL,
    max_steps: int = MAX_STEPS,
) -> Sequence[SLOEvaluation]:
    """Evaluate and store every due step of every SLO, and again every step a late write changed;
    returns what was evaluated, oldest first per SLO.

    SLOs without a dirty mark are evaluated step by step together from running sums
    (:meth:`EvaluationStore.step_counter`); a dirty one is evaluated from the store's counts and
    its running sums are forgotten (rebuilt at its next step)."""
    plans = _plans(store, model, now, step, max_backfill, max_steps)
    store.announce({p.slo_id: max(p.redo[-1:] + p.new[-1:]) for p in plans if p.redo or p.new})
    dirty = [p for p in plans if p.mark is not None]
    store.forget_running([p.slo_id for p in dirty])
    done: list[Sequence[SLOEvaluation]] = list(
        _sweep(store, model, [p for p in plans if p.mark is None and p.new])
    )
    for p in dirty:
        with store.counter() as counts:
            again = [evaluate_counts(p.slo, at, counts) for at in p.redo]
            fresh = [evaluate_counts(p.slo, at, counts) for at in p.new]
        if again:
            store.save_evaluations(again, replace=True)
        if fresh:
            store.save_evaluations(fresh)
        assert p.mark is not None
        store.advance_dirty(p.mark, _still_dirty(p, now, step, max_backfill))
        done.append(again + fresh)
    return Evaluations(done)


def _sweep(store: EvaluationStore, model: Model, plans: Sequence[_Plan]) -> list[StepEvaluations]:
    """Every instant any of ``plans`` is due at, oldest first: the running sums are advanced to
    it for the SLOs due then, all of them evaluated column-wise and stored together."""
    lengths = rolling_lengths(model.slos)
    done: list[StepEvaluations] = []
    for at in sorted({at for p in plans for at in p.new}):
        due = [p for p in plans if p.new[0] <= at <= p.new[-1]]
        with store.step_counter(at, [p.slo_id for p in due], lengths) as counts:
            fresh = evaluate_columns([p.slo for p in due], at, counts)
        store.save_evaluations(fresh)
        done.append(fresh)
    return done


class Evaluations(Sequence[SLOEvaluation]):
    """What :func:`evaluate_due` evaluated, by SLO then instant; each evaluation is built when
    read (a step of 50,000 SLOs is 500,000 windows: the caller may need only a few, or none)."""

    def __init__(self, parts: Sequence[Sequence[SLOEvaluation]]) -> None:
        self._parts = [p for p in parts if len(p)]
        self._order: list[tuple[int, int]] | None = None

    def __len__(self) -> int:
        return sum(len(p) for p in self._parts)

    def _sorted(self) -> list[tuple[int, int]]:
        if self._order is None:
            keys: list[tuple[tuple[str, float], int, int]] = []
            for k, part in enumerate(self._parts):
                pairs = (
                    part.keys()
                    if isinstance(part, StepEvaluations)
                    else [(e.slo_id, e.evaluated_at) for e in part]
                )
                keys.extend((key, k, i) for i, key in enumerate(pairs))
            keys.sort()
            self._order = [(k, i) for _, k, i in keys]
        return self._order

    @overload
    def __getitem__(self, i: int) -> SLOEvaluation: ...

    @overload
    def __getitem__(self, i: slice) -> list[SLOEvaluation]: ...

    def __getitem__(self, i: int | slice) -> SLOEvaluation | list[SLOEvaluation]:
        order = self._sorted()
        if isinstance(i, slice):
            return [self._parts[k][j] for k, j in order[i]]
        k, j = order[i]
        return self._parts[k][j]

    def __iter__(self) -> Iterator[SLOEvaluation]:
        return (self._parts[k][j] for k, j in self._sorted())

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same evaluations in the same order (a list, for one)."""
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Evaluations({list(self)!r})"


def _still_dirty(p: _Plan, now: float, step: float, max_backfill: float) -> float | None:
    """Where the mark moves once ``p.redo`` is stored: None only when every evaluated step it
    changed has been redone (or lies beyond ``max_backfill``). Steps after the horizon ``now`` —
    in a fleet, the slowest replica's, often behind the last evaluated step exactly when late
    writes arrive — stay dirty until a later run reaches them."""
    if p.last is None or p.mark is None:
        return None
    if p.redo:
        through = p.redo[-1]
        return None if through >= p.last else through + step
    first = max(math.ceil(p.mark.since / step) * step, align(now - max_backfill, step) + step)
    return None if first > p.last else p.mark.since
