"""Keeping stored evaluations current: evaluate every step that is due, backfilling after downtime.

Evaluation instants are aligned to ``step`` seconds (60 s: on the minute). :func:`evaluate_due`
asks the store for the last stored instant of each SLO and evaluates every missed step up to
``now``, oldest first, but never further back than ``max_backfill`` (24 h) and at most
``max_steps`` steps per SLO per call, so a long outage is caught up over a few calls instead of
stalling one. Stored rows are keyed by (SLO, window, instant), so evaluating a step twice is
harmless. A step is evaluated :data:`SETTLE` seconds after its instant, never earlier.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from monitor.model import Model
from monitor.slo.evaluate import Counter, SLOEvaluation, evaluate_counts
from monitor.slo.windows import align

STEP = 60.0
#: A step is evaluated only this long after its instant. Events happen when their outcome is known
#: (a probe's completion, docs/slo-events.md), so a probe still in flight at the step belongs to a
#: later one; what a step must wait for is the write of results completed just before it.
SETTLE = 5.0
MAX_BACKFILL = 86400.0
MAX_STEPS = 240


class EvaluationStore(Protocol):
    """What :func:`evaluate_due` needs from a store (the SQL store implements it)."""

    def counter(self) -> AbstractContextManager[Counter]:
        """A :data:`~monitor.slo.evaluate.Counter` valid inside the ``with`` block (one read session)."""
        ...

    def last_evaluated_at(self, slo_id: str) -> float | None: ...

    def save_evaluations(self, evaluations: Sequence[SLOEvaluation]) -> int: ...


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
    count = int((newest - first) // step) + 1 if newest >= first else 0
    return [first + i * step for i in range(min(count, max_steps))]


def evaluate_due(
    store: EvaluationStore,
    model: Model,
    now: float,
    step: float = STEP,
    max_backfill: float = MAX_BACKFILL,
    max_steps: int = MAX_STEPS,
) -> list[SLOEvaluation]:
    """Evaluate and store every due step of every SLO; returns what was evaluated, oldest first."""
    done: list[SLOEvaluation] = []
    for slo in model.slos:
        steps = due_steps(store.last_evaluated_at(slo.id), now, step, max_backfill, max_steps)
        if not steps:
            continue
        with store.counter() as counts:
            evaluations = [evaluate_counts(slo, at, counts) for at in steps]
        if evaluations:
            store.save_evaluations(evaluations)
            done.extend(evaluations)
    return done
