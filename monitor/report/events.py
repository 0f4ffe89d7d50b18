"""An SLO's numbers over any window, from the store's event counts.

Good and total events come from :class:`monitor.store.counts.EventCounts` (slices ending in
``(start, end]``, hourly rollups for whole hours); the ratios come from
:func:`monitor.slo.evaluate.window_result`, the same arithmetic the stored evaluations use.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from monitor.model import SLO
from monitor.slo.evaluate import WindowResult, window_result
from monitor.slo.windows import Window
from monitor.store.counts import EventCounts


class Windows:
    """Window results of SLOs over one read session."""

    def __init__(self, session: Session) -> None:
        self.counts = EventCounts(session)

    def result(self, slo: SLO, start: float, end: float, name: str = "report") -> WindowResult:
        good, total = self.counts.counts(slo.id, start, end)
        return window_result(slo, Window(name, start, end), good, total)

    def period_at(self, slo: SLO, at: float) -> WindowResult:
        """The SLO period (e.g. 30d) ending at ``at``: the budget left at that instant."""
        return self.result(slo, at - slo.period, at, slo.period_window)
