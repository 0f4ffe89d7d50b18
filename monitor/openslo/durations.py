"""Durations between m3mon's configuration (seconds) and text: ``30d``, ``15s``, ``250ms``."""

from __future__ import annotations

from monitor.config import parse_duration

_UNITS = (("w", 604800.0), ("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0))
#: OpenSLO duration shorthand units (v1): minutes to years; months, quarters, years are calendar units.
OPENSLO_UNITS = {"m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
#: v1alpha ``timeWindows[].unit`` words.
V1ALPHA_UNITS = {"Second": "s", "Minute": "m", "Hour": "h", "Day": "d", "Week": "w", "Month": "M",
                 "Quarter": "Q", "Year": "Y"}  # fmt: skip


def format_duration(seconds: float) -> str:
    """The shortest text m3mon's config reads back to exactly ``seconds`` (``1w`` is written ``7d``)."""
    texts = [f"{int(seconds / size)}{unit}" for unit, size in _UNITS[1:] if (seconds / size).is_integer()]
    texts += [f"{seconds:g}s", f"{seconds * 1000:g}ms", f"{seconds!r}s"]
    for text in texts:
        try:
            if parse_duration(text) == seconds:
                return text
        except ValueError:
            continue
    return repr(seconds)


def openslo_seconds(text: str) -> float | None:
    """Seconds of an OpenSLO shorthand with a fixed length (``30d``, ``4w``); None otherwise."""
    if len(text) < 2 or not text[:-1].isdigit() or text[-1] not in OPENSLO_UNITS:
        return None
    return int(text[:-1]) * OPENSLO_UNITS[text[-1]]
