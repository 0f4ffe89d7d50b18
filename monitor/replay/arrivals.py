"""Arrival times of a replay: Poisson, bursty (gamma) or a replay of observed gaps.

``bursty`` follows ``vllm bench serve --burstiness``: inter-arrival gaps are gamma-distributed
with shape ``burstiness`` and mean ``1 / rate`` (shape 1 is Poisson; below 1 the same mean rate
comes in bursts). ``replay`` cycles the profile's observed gaps, scaled so their mean matches the
requested rate when one is given on the command line.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from monitor.replay.profile import Arrival


def gaps(arrival: Arrival, rng: random.Random, rate: float | None = None) -> Iterator[float]:
    """Endless inter-arrival gaps in seconds; ``rate`` (requests/s) overrides the profile's."""
    target = rate if rate is not None else arrival.rate
    if arrival.process == "replay":
        observed = arrival.inter_arrivals
        mean = sum(observed) / len(observed)
        scale = (1.0 / target) / mean if rate is not None and mean > 0 else 1.0
        yield from (g * scale for g in itertools.cycle(observed))
        return
    shape = arrival.burstiness if arrival.process == "bursty" else 1.0
    while True:
        yield rng.gammavariate(shape, 1.0 / (target * shape))


def schedule(arrival: Arrival, rng: random.Random, duration: float, rate: float | None = None) -> list[float]:
    """Send offsets (seconds from the start) of every request arriving within ``duration``."""
    out: list[float] = []
    t = 0.0
    for gap in gaps(arrival, rng, rate):
        t += gap
        if t >= duration:
            return out
        out.append(t)
    return out  # pragma: no cover - gaps() never ends
