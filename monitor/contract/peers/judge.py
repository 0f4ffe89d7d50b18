"""A class's SLO clauses judged on a peer run, from what the file holds and nothing more.

The events are those of docs/slo-events.md, as for a replay (:mod:`monitor.replay.clauses`):
availability — every completed or failed request (requests the tool cancelled when its run ended
count for neither), good when completed; a latency SLI — one event per completed request (ITL:
per token), good at or under the threshold, **plus one bad event per failed request** (a request
that failed never met a latency limit: a run with 36 of 40 requests failed cannot hold a latency
SLO on the 4 survivors, whether or not the class has an availability SLO). A clause holds when
good / total ≥ objective.

* **Per-request values**: the events are counted exactly.
* **Quantiles only**: the number of good events is *bounded*. A reported percentile ``v`` of
  ``n`` values lies between two order statistics (:meth:`Quantiles.ranks`): ``v ≤ T`` means at
  least ``lo + 1`` values are ≤ T; ``v > T`` means at most ``hi`` are (a point within a rounding
  of T says nothing); the minimum and maximum bound it too. The clause holds when the lower bound
  already meets the objective, fails when the upper bound cannot, and is *not judged* otherwise —
  e.g. a 99.9 % objective from a file whose highest percentile, P99, is under the threshold. No
  sample is invented.
* An SLI the file has no figure for (queue time, or ITL from GuideLLM and AIPerf) is not judged,
  with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from monitor.contract.peers.model import PeerRun, Quantiles
from monitor.model import SLO
from monitor.replay.clauses import REPLAY_LATENCY_SLIS


@dataclass(frozen=True)
class PeerClause:
    """One SLO judged on one peer run; ``good`` is None when only bounds are known."""

    slo: str
    sli: str
    objective: float
    threshold: float | None
    good: int | None
    total: int
    holds: bool | None
    basis: str
    good_bounds: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        attained = self.good / self.total if self.good is not None and self.total else None
        return {
            "slo": self.slo, "sli": self.sli, "objective": self.objective, "threshold": self.threshold,
            "good": self.good, "total": self.total, "attained": attained, "holds": self.holds,
            "basis": self.basis, "good_bounds": list(self.good_bounds) if self.good_bounds else None,
        }  # fmt: skip


def good_bounds(q: Quantiles, threshold: float) -> tuple[int, int]:
    """Least and most values of ``q`` that can be ≤ ``threshold`` given its reported points."""
    n = q.count or 0
    lo, hi = 0, n
    tol = 1e-9 * max(abs(threshold), 1e-6)  # an interpolated point is only known to a rounding
    for p, v in q.points.items():
        first, last = q.ranks(p)
        if v <= threshold - tol:
            lo = max(lo, first + 1)
        elif v > threshold + tol:
            hi = min(hi, last)
    if q.minimum is not None:
        lo, hi = (lo, 0) if q.minimum > threshold else (max(lo, 1), hi)
    if q.maximum is not None:
        lo, hi = (n, hi) if q.maximum <= threshold else (lo, min(hi, n - 1))
    return min(lo, hi), hi


def _failed(run: PeerRun) -> str:
    return f" + {run.failed} failed request(s), each a bad event" if run.failed else ""


def _from_quantiles(slo: SLO, q: Quantiles, threshold: float, run: PeerRun) -> PeerClause:
    n = q.count or 0
    total = n + run.failed
    lo, hi = good_bounds(q, threshold)
    points = ", ".join(f"P{p:g} {v * 1000:.1f} ms" for p, v in sorted(q.points.items()))
    holds = True if lo >= slo.objective * total else False if hi < slo.objective * total else None
    basis = f"{lo}–{hi} of {total} good from the file's {q.method} quantiles ({points}){_failed(run)}"
    if holds is None:
        basis += f": cannot decide a {slo.objective:.2%} objective"
    return PeerClause(slo.name, slo.sli, slo.objective, threshold, None, total, holds, basis, (lo, hi))


def _latency(slo: SLO, run: PeerRun, threshold: float) -> PeerClause:
    samples = run.samples.get(slo.sli)
    if samples:
        good, total = sum(1 for s in samples if s <= threshold), len(samples) + run.failed
        holds = good / total >= slo.objective
        return PeerClause(slo.name, slo.sli, slo.objective, threshold, good, total, holds,
                          f"per-request values ({len(samples)} events{_failed(run)})")  # fmt: skip
    q = run.quantiles.get(slo.sli)
    if q is not None and q.count:
        return _from_quantiles(slo, q, threshold, run)
    why = f"the {run.tool} file has no {slo.sli} figure m3mon can count events from"
    return PeerClause(slo.name, slo.sli, slo.objective, threshold, None, 0, None, why)


def judge_peer(run: PeerRun, slos: Sequence[SLO]) -> list[PeerClause]:
    """One clause per availability and latency SLO of the class (correctness SLOs are not judged)."""
    out: list[PeerClause] = []
    for slo in slos:
        if slo.sli == "availability":
            total = run.completed + run.failed
            holds = run.completed / total >= slo.objective if total else None
            basis = f"{run.completed} completed, {run.failed} failed (the tool's counts)"
            out.append(PeerClause(slo.name, slo.sli, slo.objective, None, run.completed, total, holds, basis))
        elif slo.sli in REPLAY_LATENCY_SLIS and slo.threshold is not None:
            out.append(_latency(slo, run, slo.threshold))
    return out


def all_hold(clauses: Sequence[PeerClause]) -> bool | None:
    """True when every judged clause holds; None when none could be judged."""
    verdicts = [c.holds for c in clauses if c.holds is not None]
    return all(verdicts) if verdicts else None
