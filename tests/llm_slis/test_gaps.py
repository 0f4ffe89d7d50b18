"""Chunk gaps of multi-token chunks, and pooled ITL percentiles from per-probe histograms.

Expectations are hand-computed (a k-token chunk after a gap g is one gap g with k tokens and k
per-token samples g/k) or taken from numpy's exact percentile of the raw samples.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from monitor.probes import gaps
from monitor.probes.timing import chunk_gaps, itl_samples
from monitor.probes.transcript import TokenChunk, Transcript


def test_multi_token_chunks_give_one_undivided_gap_and_k_samples() -> None:
    # sent at 10.0; first chunk (1 token) at 10.4, then 3 tokens after 0.3 s, 1 after 2.0 s, 4 after 0.2 s
    chunks = [TokenChunk(10.4, "answer", 1), TokenChunk(10.7, "answer", 3),
              TokenChunk(12.7, "answer", 1), TokenChunk(12.9, "answer", 4)]  # fmt: skip
    t = Transcript(chunks=chunks)
    found = chunk_gaps(t, sent=10.0)
    assert [(round(g.at, 6), round(g.seconds, 6), g.tokens, g.before) for g in found] == [
        (0.4, 0.3, 3, 1), (0.7, 2.0, 1, 4), (2.7, 0.2, 4, 5)]  # fmt: skip
    assert itl_samples(t) == pytest.approx((0.1,) * 3 + (2.0,) + (0.05,) * 4)
    assert max(found, key=lambda g: g.seconds).seconds == pytest.approx(2.0)


def test_pooled_quantiles_are_within_a_bucket_of_the_exact_ones() -> None:
    rng = random.Random(7)
    probes = [[rng.lognormvariate(-3.5, 0.6) for _ in range(rng.randint(20, 200))] for _ in range(50)]
    probes[3] += [3.0]  # one stall
    pooled = gaps.merge(gaps.itl_histogram(p) for p in probes)
    every = [v for p in probes for v in p]
    assert gaps.count(pooled) == len(every)
    for q in (0.5, 0.95, 0.99):
        exact = float(np.percentile(every, q * 100))
        found = gaps.quantile(pooled, q)
        assert found is not None and exact / 1.2 <= found <= exact * 1.2, (q, exact, found)


def test_merge_of_histograms_equals_histogram_of_all_samples() -> None:
    a, b = [0.01, 0.02, 0.5], [0.02, 0.0, 7.0, 1e6]
    assert gaps.merge([gaps.itl_histogram(a), None, gaps.itl_histogram(b)]) == gaps.itl_histogram(a + b)
    assert gaps.quantile({}, 0.5) is None
    with pytest.raises(ValueError, match="not one of the fixed edges"):
        gaps.quantile({"0.123": 1}, 0.5)
