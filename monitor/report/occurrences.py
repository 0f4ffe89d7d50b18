"""How a maintenance occurrence is described, the same in ``m3mon maintenance list`` and the report.

Kept free of the store and the report's data so the command line stays quick to start.
"""

from __future__ import annotations

from monitor.maintenance import Occurrence

STATES = ("past", "in progress", "planned")


def state(o: Occurrence, at: float) -> str:
    """past, in progress or planned at ``at``; an occurrence holds ``(start, end]``, so it is
    still in progress at exactly its end and planned at exactly its start."""
    return "past" if o.end < at else "in progress" if o.start < at else "planned"


def applies_to(classes: tuple[str, ...], endpoints: tuple[str, ...]) -> str:
    """``classes chat, agent; endpoints ep-a`` as the window was written."""
    parts = [
        f"classes {', '.join(classes)}" if classes else "",
        f"endpoints {', '.join(endpoints)}" if endpoints else "",
    ]
    return "; ".join(p for p in parts if p)


def length(seconds: float) -> str:
    """A window's length in the config's units: ``2h``, ``1h 30m``, ``1d``, ``1d 2h`` (whole minutes)."""
    days, rest = divmod(round(seconds / 60), 1440)
    hours, mins = divmod(rest, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{mins}m" if mins else ""]
    return " ".join(p for p in parts if p) or "0m"
