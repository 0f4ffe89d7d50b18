"""Benchmark: ``m3mon compare``'s false alarms per comparison, on A/A runs (issue 41).

A comparison of two replay runs tests nine rows (TTFT, TPOT and e2e at P50, P95 and P99). For
``M3MON_BENCH_COMPARISONS`` (default 1,000) A/A comparisons per sample size — both runs drawn from
one lognormal latency distribution, the nine rows independent (the worst case for a family) —
printed: the share of rows beyond noise (each row's own 5 %), the share of comparisons with at
least one row beyond noise without a correction (what ``compare`` printed before), and with
Holm's correction (what it prints now). Simulated draws: the numbers do not depend on the machine.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.contract.compare import QS, TESTED
from monitor.contract.stats import holm, percentile_tests


def _draw(rng: random.Random, n: int) -> list[float]:
    return [rng.lognormvariate(-1.0, 0.6) for _ in range(n)]


def main() -> int:
    comparisons = int(os.environ.get("M3MON_BENCH_COMPARISONS", "1000"))
    print(f"A/A comparisons of {len(TESTED) * len(QS)} rows, {comparisons} per sample size")
    head = ("n per run", "rows beyond noise", "comparisons, uncorrected", "comparisons, Holm")
    print(f"{head[0]:>10} {head[1]:>18} {head[2]:>25} {head[3]:>18}")
    worst = 0.0
    for n in (50, 100, 300, 1000):
        rng = random.Random(n)
        rows = judged = plain = family = 0
        for _ in range(comparisons):
            found = [d for _ in TESTED for d in percentile_tests(_draw(rng, n), _draw(rng, n), QS).values()]
            judged += sum(d.beyond_noise is not None for d in found)
            rows += sum(bool(d.beyond_noise) for d in found)
            plain += any(d.beyond_noise for d in found)
            family += any(d.beyond_noise for d in holm(found))
        worst = max(worst, family / comparisons)
        row, plain_rate, family_rate = rows / max(judged, 1), plain / comparisons, family / comparisons
        print(f"{n:>10} {row:>18.2%} {plain_rate:>25.2%} {family_rate:>18.2%}")
    print(f"worst per-comparison rate with Holm: {worst:.2%} (stated: 5 %)")
    return 0 if worst <= 0.05 + 3 * (0.05 * 0.95 / comparisons) ** 0.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
