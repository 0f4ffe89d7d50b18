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
    text = f"{ratio * 100:.{digits}f}"
    return f"{unsigned_zero(text)}%"


def unsigned_zero(text: str) -> str:
    """``-0``, ``-0.0``, … (a small negative rounded to zero) written without its sign."""
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def share(ratio: float) -> str:
    """A share in whole percent (``0.714`` -> ``71%``); a small negative that rounds to zero is
    ``0%``, never ``-0%``."""
    return f"{unsigned_zero(f'{ratio * 100:.0f}')}%"


def attainment(ratio: float | None) -> str:
    return percent(ratio, ATTAINMENT_DIGITS)


def budget(ratio: float | None) -> str:
    """Share of the error budget left (negative when overspent)."""
    return percent(ratio, BUDGET_DIGITS)
