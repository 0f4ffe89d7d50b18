"""Every SLO of one step evaluated at once, column-wise (numpy): the same numbers as
:func:`monitor.slo.evaluate.evaluate_counts`, without one Python object per window.

A step of N SLOs is N × 10 windows. Per window and SLO in Python (a frozen result each, a status
from a dictionary of them) that is ~10 µs per SLO; here each window is a column of an N-row
matrix of good and total events, and the ratios, the period's budget and the burn conditions of
:mod:`monitor.slo.evaluate` are array expressions over them (the same float operations in the
same order, so the same bits). :class:`StepEvaluations` holds the matrices and builds an
:class:`~monitor.slo.evaluate.SLOEvaluation` only when one is asked for; the stored rows are built
from the columns (:meth:`StepEvaluations.rows`).

SLOs are grouped by their windows (the period: ``30d`` or ``28d``); every SLO of a group shares
the windows' bounds at the step.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload

import numpy as np
from numpy.typing import NDArray

from monitor.conventions import BurnAlert
from monitor.model import SLO
from monitor.slo.evaluate import (
    STATUS_BURNING,
    STATUS_EXHAUSTED,
    STATUS_NO_DATA,
    STATUS_OK,
    SLOEvaluation,
    _conditions,
    _result,
)
from monitor.slo.windows import Window, windows_at

Floats = NDArray[np.float64]


class ColumnCounter(Protocol):
    """Window counts one at a time (a :data:`~monitor.slo.evaluate.Counter`) or column-wise."""

    def __call__(self, slo_id: str, start: float, end: float) -> tuple[float, float]: ...

    def columns(self, slo_ids: Sequence[str], starts: Sequence[float], end: float) -> tuple[Floats, Floats]:
        """(good, total): a row per SLO, a column per window ``(start, end]``."""
        ...


#: the stored ``windows`` object's keys, each a list over the windows (shortest first)
WINDOW_KEYS = ("window", "start", "good", "total", "attainment", "budget_remaining", "burn_rate")
#: status codes of :attr:`_Group.status`, and severities (0: none)
_STATUSES = (STATUS_OK, STATUS_BURNING, STATUS_EXHAUSTED, STATUS_NO_DATA)
_SEVERITIES: tuple[str | None, ...] = (None, "page", "ticket")


@dataclass(frozen=True)
class _Facts:
    """What a group of SLOs sharing their windows needs at every step, computed once for the same
    SLOs (:func:`_grouped`): ids, error budgets, and per burn condition every SLO's error-ratio
    threshold and events guard."""

    slos: tuple[SLO, ...]
    ids: list[str]
    budget: Floats
    alerts: list[tuple[BurnAlert, Floats, Floats]]


@dataclass(frozen=True)
class _Group:
    """SLOs sharing their windows, evaluated at ``at``: matrices [SLO, window]."""

    facts: _Facts
    at: float
    windows: tuple[Window, ...]
    good: Floats
    total: Floats
    status: NDArray[np.int8]
    severity: NDArray[np.int8]

    @property
    def slos(self) -> tuple[SLO, ...]:
        return self.facts.slos

    def evaluation(self, i: int) -> SLOEvaluation:
        slo = self.slos[i]
        good, total, budget = self.good[i].tolist(), self.total[i].tolist(), slo.budget
        results = tuple(_result(budget, w, g, t) for w, g, t in zip(self.windows, good, total, strict=True))
        return SLOEvaluation(slo.id, slo.request_class, slo.name, slo.sli, slo.objective, self.at, results,
                             _STATUSES[self.status[i]], _SEVERITIES[self.severity[i]])  # fmt: skip

    def rows(self) -> list[dict[str, Any]]:
        """The stored rows (:func:`monitor.store.ops.evaluation_row`'s, built from the columns):
        each window column a row of a numpy matrix, NaN where a ratio is stored as null (no
        events; any NaN or ±Inf), serialized without one Python float per number
        (:func:`monitor.store.upsert.insert_many_ignore`)."""
        names, starts = [w.name for w in self.windows], [w.start for w in self.windows]
        budget = self.facts.budget[:, None]
        good, total = self.good, self.total
        with np.errstate(all="ignore"):
            burn = ((total - good) / total) / budget
            matrix = np.stack([good, total, good / total, 1.0 - burn, burn], axis=1)  # [SLO, column, window]
        ratios = matrix[:, 2:]
        ratios[~np.isfinite(ratios) | (total[:, None, :] <= 0)] = np.nan
        statuses, severities = self.status.tolist(), self.severity.tolist()
        columns = [list(matrix[:, k]) for k in range(5)]  # a view per SLO, made in C
        return [{"slo_id": slo_id, "evaluated_at": self.at, "request_class": slo.request_class,
                 "slo_name": slo.name, "sli": slo.sli, "objective": slo.objective,
                 "status": _STATUSES[status], "severity": _SEVERITIES[severity],
                 "windows": {"window": names, "start": starts, "good": g, "total": t, "attainment": a,
                             "budget_remaining": b, "burn_rate": r}}
                for slo, slo_id, g, t, a, b, r, status, severity
                in zip(self.slos, self.facts.ids, *columns, statuses, severities, strict=True)]  # fmt: skip


class StepEvaluations(Sequence[SLOEvaluation]):
    """The evaluations of one step, column-wise; an :class:`SLOEvaluation` is built when read."""

    def __init__(self, groups: Sequence[_Group]) -> None:
        self._groups = list(groups)
        self._starts = np.cumsum([0] + [len(g.slos) for g in self._groups])

    def __len__(self) -> int:
        return int(self._starts[-1])

    @overload
    def __getitem__(self, i: int) -> SLOEvaluation: ...

    @overload
    def __getitem__(self, i: slice) -> list[SLOEvaluation]: ...

    def __getitem__(self, i: int | slice) -> SLOEvaluation | list[SLOEvaluation]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        g = int(np.searchsorted(self._starts, i, side="right")) - 1
        return self._groups[g].evaluation(i - int(self._starts[g]))

    def __iter__(self) -> Iterator[SLOEvaluation]:
        for group in self._groups:
            for i in range(len(group.slos)):
                yield group.evaluation(i)

    def keys(self) -> list[tuple[str, float]]:
        """(SLO id, instant) of each evaluation, in order (without building them)."""
        return [(slo_id, g.at) for g in self._groups for slo_id in g.facts.ids]

    def rows(self) -> list[dict[str, Any]]:
        return [row for g in self._groups for row in g.rows()]


def evaluate_columns(slos: Sequence[SLO], at: float, counts: ColumnCounter) -> StepEvaluations:
    """Every window of every SLO in ``slos`` at ``at``: :func:`monitor.slo.evaluate.evaluate_counts`
    of each, column-wise."""
    groups = []
    for facts in _grouped(slos):
        windows = windows_at(facts.slos[0], at)
        good, total = counts.columns(facts.ids, [w.start for w in windows], at)
        status, severity = _status(facts, windows, good, total)
        groups.append(_Group(facts, at, windows, good, total, status, severity))
    return StepEvaluations(groups)


def _status(
    facts: _Facts, windows: tuple[Window, ...], good: Floats, total: Floats
) -> tuple[NDArray[np.int8], NDArray[np.int8]]:
    """:func:`monitor.slo.evaluate.status_of` of every row: status and severity codes."""
    n = len(facts.slos)
    column = {w.name: k for k, w in enumerate(windows)}
    p = column.get(facts.slos[0].period_window) if n else None
    status, severity = np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.int8)
    if p is None:
        status[:] = _STATUSES.index(STATUS_NO_DATA)
        return status, severity
    with np.errstate(all="ignore"):
        ratio = (total - good) / total  # the error ratio of every window (NaN without events)
        remaining = 1.0 - ratio[:, p] / facts.budget
    no_data = ~(total[:, p] > 0)
    exhausted = ~no_data & (remaining <= 0)
    fired = np.zeros(n, dtype=np.bool_)
    for alert, threshold, guard in facts.alerts:
        long_k, short_k = column.get(alert.long_window), column.get(alert.short_window)
        if long_k is None or short_k is None:
            continue
        holds = (total[:, long_k] >= guard) & (total[:, long_k] > 0) & (total[:, short_k] > 0)
        holds &= (ratio[:, long_k] > threshold) & (ratio[:, short_k] > threshold)
        severity[holds & ~fired] = _SEVERITIES.index(alert.severity)
        fired |= holds
    status[fired] = _STATUSES.index(STATUS_BURNING)
    status[exhausted] = _STATUSES.index(STATUS_EXHAUSTED)
    status[no_data] = _STATUSES.index(STATUS_NO_DATA)
    severity[no_data | exhausted] = 0
    return status, severity


#: the groups of the SLO lists seen last, by the SLOs' identities (the SLOs are held by the
#: groups, so their identities stay theirs)
_CACHE: dict[tuple[int, ...], list[_Facts]] = {}


def _grouped(slos: Sequence[SLO]) -> list[_Facts]:
    """``slos`` by their windows (the period), each group's facts: the same at every step, so
    computed once for the same SLOs, not once per step."""
    key = tuple(map(id, slos))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    by_period: dict[float, list[SLO]] = {}
    for slo in slos:
        by_period.setdefault(slo.period, []).append(slo)
    # the conditions depend on these alone: computed once per distinct set, not once per SLO
    shared: dict[tuple[float, float, float | None, int | None], SLO] = {}
    out = []
    for members in by_period.values():
        keys = [(s.objective, s.period, s.page_within, s.min_events) for s in members]
        conditions = [_conditions(shared.setdefault(k, s)) for k, s in zip(keys, members, strict=True)]
        alerts = []
        for k, (alert, _, _) in enumerate(conditions[0]):
            threshold = np.array([c[k][1] for c in conditions], dtype=np.float64)
            guard = np.array([c[k][2] for c in conditions], dtype=np.float64)
            alerts.append((alert, threshold, guard))
        budget = np.array([shared[k].budget for k in keys], dtype=np.float64)
        out.append(_Facts(tuple(members), [s.id for s in members], budget, alerts))
    if len(_CACHE) >= 8:
        _CACHE.clear()
    _CACHE[key] = out
    return out
