"""Durations as the user writes them: ``250ms``, ``15s``, ``5m``, ``1h``, ``30d``, ``1w`` or seconds."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(value: object) -> float:
    """Seconds from ``250ms``, ``15s``, ``5m``, ``1h``, ``30d``, ``1w`` or a plain number of seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 15s, 5m or 30d")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError(f"expected a positive duration, got {value}")
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value.strip())
        if match and float(match.group(1)) > 0:
            return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    raise ValueError(f"expected a duration such as 15s, 5m or 30d, got {value!r}")


def parse_latency(value: object) -> float:
    """Seconds from a latency written with its unit (``250ms``, ``2.5s``). A bare number is
    refused: ``threshold: 100`` meant 100 ms as often as 100 s, and a wrong guess turns an SLO
    into one that never fails."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(
            f"a latency needs its unit, e.g. {value:g}ms or {value:g}s; got the bare number {value:g}"
        )
    return parse_duration(value)


Duration = Annotated[float, BeforeValidator(parse_duration)]
#: A latency threshold: a duration that must be written with its unit.
Latency = Annotated[float, BeforeValidator(parse_latency)]
