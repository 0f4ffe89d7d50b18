"""Context ceilings from traffic: what a class uses of its ceiling and of its pool's max-model-len.

Observed length per request = prompt + output tokens. From per-request counts (probe runs) the
percentiles are exact (nearest rank); from a pool's server histograms only the marginals are
known, so P_q(prompt) + P_q(output) is used — an upper bound of P_q(prompt + output).

Advice (thresholds are module constants, quoted in docs/contract.md):

* **KV waste** when the pool's max-model-len is more than :data:`WASTE_FACTOR` × the largest P99
  of the pool's traffic (:class:`PoolNeed`: every class it serves, every probe kind, the server
  histograms of a dedicated pool, the pool's real-traffic spans): the pool reserves context (and
  KV blocks per sequence at admission) the traffic never uses. A pool's --max-model-len must fit
  every class it serves, so only the class whose traffic sizes the pool is advised to lower it
  (never below that P99); another class on the pool whose own P99 alone would look wasteful gets
  a note naming the larger traffic instead.
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
class PoolNeed:
    """What a pool's --max-model-len must hold: the largest P99 among the populations of its
    traffic, with whose it is (a class, or None for a shared pool's real-traffic spans) and the
    population quoted."""

    pool: str
    p99: float
    owner: str | None
    population: str  # e.g. "agent: 10102 samples from probe runs of every kind (...)"
    ceiling: int = 0  # the largest context ceiling among the classes the pool serves
    ceiling_owner: str | None = None  # whose ceiling that is


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
    request_class: str | None = None  # whose use this is
    pool: PoolNeed | None = None  # what the class's pool must hold (None: judged on this use alone)

    def _waste(self, p99: float) -> list[str]:
        """The KV-waste advice (module docstring), or the note that another class's traffic or a
        class's context ceiling sizes the pool: no advice lowers --max-model-len below either."""
        size, need = self.max_model_len, self.pool
        if size is None:
            return []
        if need is not None and need.owner != self.request_class:
            if size <= WASTE_FACTOR * p99:
                return []
            whose = need.owner or "real traffic"
            return [
                f"no KV-waste advice for this class: pool {need.pool}'s --max-model-len must also fit "
                f"{whose}'s P99 of {need.p99:.0f} tokens ({need.population})"
            ]
        top = need.p99 if need is not None else p99
        if size <= WASTE_FACTOR * top:
            return []
        ceiling, owner = (need.ceiling, need.ceiling_owner) if need is not None else (self.ceiling, None)
        if self.ceiling > ceiling:
            ceiling, owner = self.ceiling, None
        whose = owner or self.request_class or "the class"
        if size <= ceiling:
            return [
                f"no KV-waste advice: max-model-len {size} is what {whose}'s context ceiling of {ceiling} "
                f"tokens needs (the traffic's P99 is {top:.0f} tokens): a lower --max-model-len would "
                "break that ceiling"
            ]
        floor, why = (ceiling, f"{whose}'s context ceiling") if ceiling >= top else (top, "the P99")
        if need is None:
            return [
                f"KV waste: max-model-len {size} is {size / p99:.0f}× the class's P99 of {p99:.0f} "
                f"tokens; a lower --max-model-len, not below the {ceiling}-token ceiling, frees KV cache"
            ]
        return [
            f"KV waste: max-model-len {size} is {size / need.p99:.0f}× the largest P99 of pool "
            f"{need.pool}'s traffic, {need.p99:.0f} tokens ({need.population}); a lower "
            f"--max-model-len, not below {floor:.0f} ({why}), frees KV cache"
        ]

    @property
    def advice(self) -> list[str]:
        out: list[str] = []
        if self.p99 is None:
            return ["no observed traffic: the ceiling is not backed by data"]
        out += self._waste(self.p99)
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
