"""SLO evaluation: event slices from probes and server signals, windows, attainment, budget, burn.

Everything here is pure (no I/O): :mod:`monitor.slo.slices` turns a probe result or a scrape
interval into per-SLO good/total event slices, :mod:`monitor.slo.windows` names the evaluation
windows, :mod:`monitor.slo.evaluate` turns good/total counts into attainment, remaining error
budget, burn rate and a status, and :mod:`monitor.slo.due` drives evaluation over any store that
offers event counts (the SQL store in :mod:`monitor.store` is one).
"""

from monitor.slo.evaluate import SLOEvaluation, WindowResult, evaluate_counts, evaluate_slices
from monitor.slo.slices import EventSlice, slices_from_probe, slices_from_signals
from monitor.slo.windows import Window, windows_at

__all__ = [
    "EventSlice",
    "SLOEvaluation",
    "Window",
    "WindowResult",
    "evaluate_counts",
    "evaluate_slices",
    "slices_from_probe",
    "slices_from_signals",
    "windows_at",
]
