"""Which causes the evidence supports, each with its seconds in the tail and the source that named
it, the costliest first. The floors are :mod:`monitor.bottleneck.cause_base`'s; the families are
:mod:`~monitor.bottleneck.cause_refusals` (shedding, retries, the application),
:mod:`~monitor.bottleneck.cause_cache` and :mod:`~monitor.bottleneck.cause_engine` (queue,
prefill, decode); the frontend (proxy) is read here.
"""

from __future__ import annotations

from monitor.bottleneck.cause_base import Cause, best, named
from monitor.bottleneck.cause_cache import cache_evidence, cache_note
from monitor.bottleneck.cause_engine import engine
from monitor.bottleneck.cause_refusals import application, retries, shedding
from monitor.bottleneck.evidence import Evidence

__all__ = ["Cause", "cache_evidence", "cache_note", "causes"]


def causes(e: Evidence) -> tuple[Cause, ...]:
    """Every cause that holds, the costliest first (shedding, which refuses rather than delays,
    is ordered by the retry seconds it causes; a cause of unknown seconds comes after the others)."""
    found = [
        shedding(e),
        retries(e),
        application(e),
        named(best(e, "frontend", "ttft"), "proxy_bound"),
        *engine(e),
    ]
    kept = [c for c in found if c is not None]
    return tuple(sorted(kept, key=lambda c: -c.seconds))
