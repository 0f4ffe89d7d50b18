"""How an SLO's attainment and budget are written, by every output: one formatter per kind.

The report (all formats), ``m3mon slo status``, ``m3mon budget gate`` and the demo's table print
these numbers through here, so one value reads the same everywhere (issue 24: one budget left was
printed as −240.51 %, −240.4 % and −240.438 % in three places). Attainment has three decimals
(``99.660%``), budget left one (``-240.4%``); ``None`` (or NaN) is "no data".
"""

from __future__ import annotations

import math
from typing import Final

NO_DATA: Final = "no data"
ATTAINMENT_DIGITS: Final = 3
BUDGET_DIGITS: Final = 1


def percent(ratio: float | None, digits: int) -> str:
    """A ratio as a percentage with fixed decimals: ``0.9995`` at 3 -> ``99.950%``."""
    if ratio is None or math.isnan(ratio):
        return NO_DATA
    return f"{ratio * 100:.{digits}f}%"


def attainment(ratio: float | None) -> str:
    return percent(ratio, ATTAINMENT_DIGITS)


def budget(ratio: float | None) -> str:
    """Share of the error budget left (negative when overspent)."""
    return percent(ratio, BUDGET_DIGITS)
