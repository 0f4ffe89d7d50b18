"""A :class:`~monitor.scrape.reading.Reading` as JSON, and back: what the store keeps of a scrape.

The store derives every scrape interval from two stored readings of the same endpoint (docs/
fleet.md: an HA pair's replicas each write their readings, the first per slot is kept, and the
interval between consecutive kept readings is computed by :func:`monitor.scrape.signals`), so a
reading must survive the trip exactly: raw series per model and engine, with the per-series keys
the counter-reset rule needs, ``_created`` times and the process start. Floats that JSON cannot
hold (NaN, ±Inf in a histogram's sum) travel as ``None`` and come back as NaN.
"""

from __future__ import annotations

import math
from typing import Any

from monitor.scrape.reading import EngineReading, Reading, SeriesKey
from monitor.scrape.signals import Histogram

FORMAT = 1


def _num(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def _histogram(h: Histogram) -> list[Any]:
    edges = ["+Inf" if math.isinf(e) else e for e in h.edges]
    return [edges, list(h.counts), _num(h.sum), h.count]


def _unhistogram(raw: list[Any]) -> Histogram:
    edges, counts, total, count = raw
    return Histogram(
        tuple(math.inf if e == "+Inf" else float(e) for e in edges),
        tuple(float(c) for c in counts),
        _float(total),
        float(count),
    )


def _engine(er: EngineReading) -> dict[str, Any]:
    return {
        "counters": [[k[0], k[1], v] for k, v in er.counters.items()],
        "histograms": [[k[0], k[1], _histogram(h)] for k, h in er.histograms.items()],
        "created": [[k[0], k[1], v] for k, v in er.created.items()],
        "gauges": {k: _num(v) for k, v in er.gauges.items()},
    }


def _key(item: list[Any]) -> SeriesKey:
    return str(item[0]), str(item[1])


def _unengine(raw: dict[str, Any]) -> EngineReading:
    return EngineReading(
        counters={_key(i): float(i[2]) for i in raw["counters"]},
        histograms={_key(i): _unhistogram(i[2]) for i in raw["histograms"]},
        created={_key(i): float(i[2]) for i in raw["created"]},
        gauges={k: _float(v) for k, v in raw["gauges"].items()},
    )


def reading_to_dict(r: Reading) -> dict[str, Any]:
    """The reading as JSON-able data (see :func:`reading_from_dict`)."""
    return {
        "format": FORMAT,
        "time": r.time,
        "backend": r.backend,
        "generation": r.generation,
        "models": {m: {e: _engine(er) for e, er in engines.items()} for m, engines in r.models.items()},
        "process_start": r.process_start,
        "cache_config": r.cache_config,
        "notes": list(r.notes),
    }


def reading_from_dict(raw: dict[str, Any]) -> Reading:
    """The reading :func:`reading_to_dict` wrote (ValueError on another format)."""
    if raw.get("format") != FORMAT:
        raise ValueError(f"stored reading of format {raw.get('format')!r}, expected {FORMAT}")
    return Reading(
        time=float(raw["time"]),
        backend=str(raw["backend"]),
        generation=str(raw["generation"]),
        models={m: {e: _unengine(er) for e, er in engines.items()} for m, engines in raw["models"].items()},
        process_start=None if raw["process_start"] is None else float(raw["process_start"]),
        cache_config={k: dict(v) for k, v in raw["cache_config"].items()},
        notes=tuple(raw["notes"]),
    )
