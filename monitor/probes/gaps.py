"""A probe's per-token ITL samples as a compact histogram on fixed edges, and pooled quantiles.

Each stored probe result keeps its inter-token latency as a sparse histogram
(:func:`itl_histogram`): ``{upper edge: count}`` over :data:`ITL_EDGES`, buckets without samples
left out. Histograms of many probes add up bucket by bucket (:func:`merge`), and
:func:`quantile` reads a percentile of the pooled samples by linear interpolation inside the
bucket that holds it, as Prometheus' ``histogram_quantile`` does. The edges are geometric
(ratio 1.2 from 1 ms), so a pooled quantile is within 20 % of the exact one (docs/probes.md).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping

#: Upper bucket edges in seconds: 1 ms × 1.2^i up to about 2 minutes, then +Inf.
ITL_EDGES: tuple[float, ...] = (*(round(0.001 * 1.2**i, 6) for i in range(65)), math.inf)

Histogram = dict[str, int]


def edge_key(edge: float) -> str:
    return "+Inf" if math.isinf(edge) else repr(edge)


def itl_histogram(samples: Iterable[float]) -> Histogram:
    """Sparse histogram of ``samples`` (seconds; negatives count as 0) over :data:`ITL_EDGES`."""
    counts: dict[int, int] = {}
    for value in samples:
        i = bisect.bisect_left(ITL_EDGES, max(value, 0.0))
        counts[i] = counts.get(i, 0) + 1
    return {edge_key(ITL_EDGES[i]): n for i, n in sorted(counts.items())}


def merge(histograms: Iterable[Mapping[str, int] | None]) -> Histogram:
    """The bucket-by-bucket sum of sparse histograms (``None``: a probe without one)."""
    total: dict[str, int] = {}
    for h in histograms:
        for key, n in (h or {}).items():
            total[key] = total.get(key, 0) + int(n)
    return total


def _dense(h: Mapping[str, int]) -> list[int]:
    index = {edge_key(e): i for i, e in enumerate(ITL_EDGES)}
    counts = [0] * len(ITL_EDGES)
    for key, n in h.items():
        if key not in index:
            raise ValueError(f"ITL histogram bucket {key!r} is not one of the fixed edges")
        counts[index[key]] += n
    return counts


def quantile(h: Mapping[str, int], q: float) -> float | None:
    """The ``q``-quantile (0..1) of the pooled samples, interpolated in its bucket; None if empty.

    A quantile in the +Inf bucket reads as the last finite edge (as ``histogram_quantile``).
    """
    counts = _dense(h)
    total = sum(counts)
    if total == 0:
        return None
    rank, seen = q * total, 0
    for i, n in enumerate(counts):
        if n and seen + n >= rank:
            upper = ITL_EDGES[i]
            lower = ITL_EDGES[i - 1] if i else 0.0
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * max(rank - seen, 0.0) / n
        seen += n
    return ITL_EDGES[-2]


def count(h: Mapping[str, int] | None) -> int:
    return sum((h or {}).values())
