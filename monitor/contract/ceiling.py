"""Context ceilings from traffic: what a class uses of its ceiling and of its pool's max-model-len.

Observed length per request = prompt + output tokens. From per-request counts (probe runs) the
percentiles are exact (nearest rank); from a pool's server histograms only the marginals are
known, so P_q(prompt) + P_q(output) is used — an upper bound of P_q(prompt + output).

Advice (thresholds are module constants, quoted in docs/contract.md):

* **KV waste** when the pool's max-model-len is more than :data:`WASTE_FACTOR` × the class's P99:
  the pool reserves context (and KV blocks per sequence at admission) the traffic never uses.
* **Pressure** when P99 exceeds :data:`PRESSURE_SHARE` of the ceiling, or when less than
  :data:`COVERAGE_MIN` of requests fit under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from monitor.probes.timing import percentile

WASTE_FACTOR = 4.0
PRESSURE_SHARE = 0.9
COVERAGE_MIN = 0.99


@dataclass(frozen=True)
class CeilingUse:
    """One class's context use against its ceiling and its pool's max-model-len."""

    ceiling: int
    max_model_len: int | None
    p50: float | None
    p95: float | None
    p99: float | None
    largest: float | None
    coverage: float | None  # share of requests with prompt + output <= ceiling
    samples: int
    source: str
    coverage_is_bound: bool = False  # a lower bound (the ceiling is not a bucket edge)

    @property
    def advice(self) -> list[str]:
        out: list[str] = []
        if self.p99 is None:
            return ["no observed traffic: the ceiling is not backed by data"]
        if self.max_model_len is not None and self.max_model_len > WASTE_FACTOR * self.p99:
            out.append(
                f"KV waste: max-model-len {self.max_model_len} is {self.max_model_len / self.p99:.0f}× "
                f"the class's P99 of {self.p99:.0f} tokens; a lower --max-model-len frees KV cache"
            )
        if self.p99 > PRESSURE_SHARE * self.ceiling:
            out.append(
                f"pressure: P99 of {self.p99:.0f} tokens is above {PRESSURE_SHARE:.0%} of the "
                f"{self.ceiling}-token ceiling"
            )
        if self.coverage is not None and self.coverage < COVERAGE_MIN and not self.coverage_is_bound:
            out.append(f"pressure: only {self.coverage:.2%} of requests fit under the ceiling")
        if self.max_model_len is not None and self.max_model_len < self.ceiling:
            out.append(
                f"the pool's max-model-len {self.max_model_len} is below the class ceiling {self.ceiling}"
            )
        return out


def from_requests(totals: Sequence[int], ceiling: int, max_model_len: int | None, source: str) -> CeilingUse:
    """Use from per-request prompt + output counts."""
    fit = sum(1 for t in totals if t <= ceiling)
    values = [float(t) for t in totals]
    return CeilingUse(
        ceiling,
        max_model_len,
        percentile(values, 50),
        percentile(values, 95),
        percentile(values, 99),
        max(values) if values else None,
        fit / len(values) if values else None,
        len(values),
        source,
    )


def from_marginals(
    prompt_q: dict[int, float],
    output_q: dict[int, float],
    coverage: float | None,
    ceiling: int,
    max_model_len: int | None,
    samples: int,
    coverage_is_bound: bool = False,
) -> CeilingUse:
    """Use from server histograms: P_q(prompt) + P_q(output) per quantile (an upper bound)."""
    total = {q: prompt_q[q] + output_q[q] for q in (50, 95, 99, 100)}
    return CeilingUse(
        ceiling,
        max_model_len,
        total[50],
        total[95],
        total[99],
        total[100],
        coverage,
        samples,
        "server histograms (sum of marginal percentiles: an upper bound)",
        coverage_is_bound,
    )
