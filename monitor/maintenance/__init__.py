"""Maintenance windows: planned work whose events no SLI counts (docs/maintenance.md).

:mod:`~monitor.maintenance.spec` is what the user writes, :mod:`~monitor.maintenance.calendar`
the frozen windows and the one exclusion rule both engines apply, :mod:`~monitor.maintenance.build`
turns one into the other.
"""

from monitor.maintenance.build import build_maintenance, problems
from monitor.maintenance.calendar import Maintenance, MaintenanceWindow, Occurrence
from monitor.maintenance.spec import MaintenanceFileSpec, MaintenanceSpec

__all__ = [
    "Maintenance",
    "MaintenanceFileSpec",
    "MaintenanceSpec",
    "MaintenanceWindow",
    "Occurrence",
    "build_maintenance",
    "problems",
]
